// The call/return event list of Wing & Gong (1993, §4), as arrays instead of objects: one entry
// per call and one per finite return, sorted by time, doubly linked so that linearizing an
// operation "lifts" its two entries out in O(1) and backtracking puts them back in O(1) (the
// removal is undone in reverse order, as in dancing links).

import { assert } from '../core/base/index.js';

/** No entry; also the return entry of an operation whose outcome is unknown. */
export const NO_ENTRY = -1;

export class EventList {
  /** Sentinels: `head` precedes the first entry and `tail` follows the last. */
  readonly head: number;
  readonly tail: number;
  readonly next: Int32Array;
  readonly prev: Int32Array;
  /** Entry → the operation it belongs to. */
  readonly op: Int32Array;
  /** Entry → 1 for a call, 0 for a return. */
  readonly isCall: Uint8Array;
  /** Call entry → its return entry, or NO_ENTRY when the operation never returned. */
  readonly returnOf: Int32Array;
  /** Operation → its call entry. */
  readonly callOf: Int32Array;

  /**
   * `calls[i]` and `returns[i]` are operation i's times; `returns[i] === Infinity` gives it no
   * return entry, so it never forces the search to backtrack and may stay unlinearized.
   */
  constructor(calls: readonly number[], returns: readonly number[]) {
    const n = calls.length;
    assert(returns.length === n, 'events: one return per call');
    const order: { time: number; isCall: boolean; op: number }[] = [];
    for (let i = 0; i < n; i++) {
      const call = calls[i] as number;
      const ret = returns[i] as number;
      assert(Number.isFinite(call), () => `events: op ${i} call time ${call}`);
      assert(ret >= call, () => `events: op ${i} returns at ${ret}, before its call at ${call}`);
      order.push({ time: call, isCall: true, op: i });
      if (ret !== Infinity) order.push({ time: ret, isCall: false, op: i });
    }
    // Intervals are closed: at equal times calls sort before returns, so an operation called at the
    // instant another returns is concurrent with it and may be linearized first.
    order.sort((a, b) =>
      a.time !== b.time
        ? a.time - b.time
        : a.isCall !== b.isCall
          ? a.isCall
            ? -1
            : 1
          : a.op - b.op,
    );
    const entries = order.length;
    this.head = entries;
    this.tail = entries + 1;
    this.next = new Int32Array(entries + 2);
    this.prev = new Int32Array(entries + 2);
    this.op = new Int32Array(entries);
    this.isCall = new Uint8Array(entries);
    this.returnOf = new Int32Array(entries).fill(NO_ENTRY);
    const callEntry = new Int32Array(n);
    this.callOf = callEntry;
    let last = this.head;
    order.forEach((ev, e) => {
      this.op[e] = ev.op;
      this.isCall[e] = ev.isCall ? 1 : 0;
      if (ev.isCall) callEntry[ev.op] = e;
      else this.returnOf[callEntry[ev.op] as number] = e;
      this.next[last] = e;
      this.prev[e] = last;
      last = e;
    });
    this.next[last] = this.tail;
    this.prev[this.tail] = last;
    this.next[this.tail] = NO_ENTRY;
    this.prev[this.head] = NO_ENTRY;
  }

  first(): number {
    return this.next[this.head] as number;
  }

  /** Removes a call entry and its return entry (if any) from the list. */
  lift(call: number): void {
    this.unlink(call);
    const ret = this.returnOf[call] as number;
    if (ret !== NO_ENTRY) this.unlink(ret);
  }

  /** Undoes `lift(call)`; lifts must be undone in reverse order. */
  unlift(call: number): void {
    const ret = this.returnOf[call] as number;
    if (ret !== NO_ENTRY) this.relink(ret);
    this.relink(call);
  }

  private unlink(e: number): void {
    const p = this.prev[e] as number;
    const n = this.next[e] as number;
    this.next[p] = n;
    this.prev[n] = p;
  }

  private relink(e: number): void {
    this.next[this.prev[e] as number] = e;
    this.prev[this.next[e] as number] = e;
  }
}
