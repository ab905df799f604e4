// Wing & Gong's depth-first search for a linearization of one partition (Wing & Gong 1993, §4),
// with Lowe's memo table (Lowe 2017, §4). Repeatedly: take a pending call that precedes the first
// return still in the event list, apply it to the model, lift it out, and start again from the
// front; on reaching a return whose operation was never linearized, backtrack. Success is the
// moment no finite-return operation is left; unknown-outcome operations may stay unlinearized.
//
// Prunings, all sound and complete:
// - An unknown-outcome operation that would leave the state unchanged is never linearized:
//   leaving it pending allows everything that linearizing it allows.
// - A read-only operation (Model.readOnly) that may go next and fits the current state is taken
//   at once, without branching: any linearization that places it later can move it to here,
//   since nothing pending must precede it and it changes no state. If that choice fails, the
//   configuration fails, so backtracking skips the alternatives at that depth ("forced" frames).
//   On histories with many concurrent reads this cuts the search by orders of magnitude.
// - Unknown-outcome operations that do the same thing (Model.effectKey) are placed in call order:
//   one may be linearized only once every earlier one is. A linearization that uses a later copy
//   where an earlier one is still unused can swap the two (the earlier one may go wherever the
//   later one may, and neither has an output to check), so none is lost, and the search tries one
//   copy at each point instead of every copy: k unknown deletes of a key cost k + 1
//   configurations instead of 2^k.
// - An unknown-outcome operation that can no longer change the state (Operation.expiresMs: an
//   unknown CAS whose expected value is gone for good) leaves the event list once a completed
//   operation called after its expiry time is linearized. The first pruning would skip it at every
//   later point anyway; this saves trying it there, which on a long history with a few hundred
//   unknown CASes was most of the search's steps.
// - The memo table cuts off configurations dominated by one already recorded: the same completed
//   operations and state, and a superset of its unknown-outcome operations used (memo.ts).
// Together they lose no linearization: if a configuration with a continuation were given up, take
// one with the shortest continuation. The operation the search tries first from it (the forced
// one, the first copy, or the continuation's first) leads to a configuration, or to one
// dominating it, that has a continuation one shorter, and so is not given up either.
//
// The search runs in slices of a given number of steps so that a caller can interleave the
// partitions of one history, as Porcupine runs them in parallel: an illegal partition is then
// found without first finishing a hard one.

import { assert } from '../core/base/index.js';
import { Bitset } from './bitset.js';
import { EventList } from './events.js';
import { MemoTable } from './memo.js';
import type { Model, Operation } from './model.js';

/** What blocked the deepest partial linearization of an illegal partition. */
export interface SearchFailure<State> {
  /** Length of the longest linearizable prefix the search found. */
  readonly depth: number;
  /** The operation whose return was reached without a place for it. */
  readonly blockedOp: number;
  /** The model state after that prefix. */
  readonly state: State;
  /** The last operations of that prefix, oldest first (at most a few, for context). */
  readonly lastOps: readonly number[];
}

export type SearchResult<State> =
  | { readonly verdict: 'ok' }
  | { readonly verdict: 'illegal'; readonly failure: SearchFailure<State> };

/** How many linearized operations a failure report quotes. */
const FAILURE_CONTEXT_OPS = 3;
/** No earlier interchangeable operation. */
const NO_TWIN = -1;

// Where the loop is: at a configuration just reached (look for a read-only operation to force),
// scanning the candidates of the current configuration, or undoing the last linearization.
const FRESH = 0;
const SCAN = 1;
const BACKTRACK = 2;
type Phase = typeof FRESH | typeof SCAN | typeof BACKTRACK;

export class LinearizationSearch<State, Input, Output> {
  private readonly events: EventList;
  /** The completed operations linearized so far. */
  private readonly bits: Bitset;
  /** The unknown-outcome operations linearized so far. */
  private readonly optionalBits: Bitset;
  /** Operation → its number in `bits` or, if it is optional, in `optionalBits`. */
  private readonly bitOf: Int32Array;
  private readonly memo: MemoTable<State>;
  /** Operations with an unknown outcome (return at +∞): linearizing them is optional. */
  private readonly optional: boolean[];
  /** Completed operations the model calls read-only: candidates for forcing. */
  private readonly readOnly: boolean[];
  /** For an optional operation, the previous one in call order with the same effect, or NO_TWIN. */
  private readonly twinBefore: Int32Array;
  private readonly callMs: Float64Array;
  /** Operation.expiresMs, +∞ where there is none. */
  private readonly expiryMs: Float64Array;
  /** Optional operations with an expiry time (Operation.expiresMs), in order of that time. */
  private readonly expiring: Int32Array;
  /** How many of `expiring` have expired: the latest call of a linearized completed operation is past their time. */
  private expired = 0;
  private latestCallMs = -Infinity;
  /** Call entries of expired operations lifted out of the event list, oldest first. */
  private readonly expiredEntries: number[] = [];
  /** Finite-return operations not yet linearized. */
  private required: number;
  // The search stack: the call entry linearized at each depth, the state before it, and whether
  // it was forced (then its alternatives need not be tried).
  private readonly stackEntries: number[] = [];
  private readonly stackStates: State[] = [];
  private readonly stackForced: boolean[] = [];
  /**
   * Per depth, when some operations expire: `expired`, `latestCallMs` and the length of
   * `expiredEntries` before that step, three numbers a frame.
   */
  private readonly stackExpiry: number[] = [];
  private state: State;
  private entry: number;
  private phase: Phase = FRESH;
  private failure: SearchFailure<State> | undefined;
  private result: SearchResult<State> | undefined;
  /** Loop iterations so far, across slices. */
  steps = 0;

  constructor(
    private readonly model: Model<State, Input, Output>,
    private readonly ops: readonly Operation<Input, Output>[],
  ) {
    this.events = new EventList(
      ops.map((o) => o.call),
      ops.map((o) => o.return),
    );
    this.optional = ops.map((o) => o.return === Infinity);
    // Sets are numbered in call order, which the search roughly follows, so that their memo
    // snapshots compress well (bitset.ts).
    this.bitOf = new Int32Array(ops.length);
    let completed = 0;
    let optionals = 0;
    const events = this.events;
    for (let e = events.first(); e !== events.tail; e = events.next[e] as number) {
      if (events.isCall[e] !== 1) continue;
      const i = events.op[e] as number;
      this.bitOf[i] = this.optional[i] === true ? optionals++ : completed++;
    }
    this.bits = new Bitset(completed);
    this.optionalBits = new Bitset(optionals);
    this.memo = new MemoTable<State>((a, b) => model.equal(a, b));
    const readOnly = model.readOnly;
    this.readOnly = ops.map(
      (o) =>
        o.return !== Infinity && o.output !== undefined && readOnly?.(o.input, o.output) === true,
    );
    this.twinBefore = twinsBefore(model, ops, this.optional);
    this.callMs = new Float64Array(ops.length);
    this.expiryMs = new Float64Array(ops.length);
    const expiring: number[] = [];
    ops.forEach((o, i) => {
      this.callMs[i] = o.call;
      this.expiryMs[i] = o.expiresMs ?? Infinity;
      if (this.optional[i] === true && o.expiresMs !== undefined) expiring.push(i);
    });
    const expiryMs = this.expiryMs;
    this.expiring = Int32Array.from(
      expiring.sort((a, b) => (expiryMs[a] as number) - (expiryMs[b] as number)),
    );
    this.required = this.optional.reduce((count, opt) => (opt ? count : count + 1), 0);
    this.state = model.init();
    this.entry = this.events.first();
  }

  /** Entries in the memo table: the search's memory use, in configurations. */
  get memoEntries(): number {
    return this.memo.size;
  }

  /** Runs at most `stepsMax` more steps; the verdict once there is one, else undefined. */
  run(stepsMax: number): SearchResult<State> | undefined {
    if (this.result === undefined) this.result = this.advance(stepsMax);
    return this.result;
  }

  private advance(stepsMax: number): SearchResult<State> | undefined {
    const { model, ops, events, optional } = this;
    for (let budget = stepsMax; budget > 0; budget--) {
      if (this.required === 0) return this.finish();
      this.steps++;
      if (this.phase === BACKTRACK) {
        if (this.pop()) continue;
        // Every backtrack starts at a return entry, which records a failure, or at a forced
        // configuration already explored, whose exploration recorded one.
        assert(this.failure !== undefined, 'search: illegal without a recorded failure');
        return { verdict: 'illegal', failure: this.failure };
      }
      if (this.phase === FRESH) {
        this.forceReadOnly();
        continue;
      }
      const entry = this.entry;
      // A finite-return operation is still pending, so its return entry lies ahead of `entry`.
      assert(entry !== events.tail, 'search: ran off the event list with operations pending');
      const op = events.op[entry] as number;
      if (events.isCall[entry] !== 1) {
        // A return reached before its operation was linearized: no pending call fits here.
        this.recordFailure(op);
        this.phase = BACKTRACK;
        continue;
      }
      // Read-only operations were all tried when this configuration was fresh, and none fit.
      if (this.readOnly[op] === true) {
        this.entry = events.next[entry] as number;
        continue;
      }
      const twin = this.twinBefore[op] as number;
      if (twin !== NO_TWIN && !this.linearized(twin)) {
        this.entry = events.next[entry] as number;
        continue;
      }
      const o = ops[op] as Operation<Input, Output>;
      const next = model.step(this.state, o.input, o.output);
      if (next !== undefined && !(optional[op] === true && model.equal(next, this.state))) {
        this.mark(op);
        if (this.remember(next)) {
          this.push(entry, next, false);
          continue;
        }
        this.unmark(op);
      }
      this.entry = events.next[entry] as number;
    }
    return this.required === 0 ? this.finish() : undefined;
  }

  /**
   * At a new configuration: if a read-only operation may go next and fits, commit to it. If its
   * configuration was already explored (and so failed), this one fails too.
   */
  private forceReadOnly(): void {
    const { model, ops, events } = this;
    for (let e = events.first(); events.isCall[e] === 1; e = events.next[e] as number) {
      const op = events.op[e] as number;
      if (this.readOnly[op] !== true) continue;
      const o = ops[op] as Operation<Input, Output>;
      const next = model.step(this.state, o.input, o.output);
      if (next === undefined) continue;
      assert(model.equal(next, this.state), 'search: a read-only operation changed the state');
      this.mark(op);
      if (this.remember(next)) {
        this.push(e, next, true);
      } else {
        this.unmark(op);
        this.phase = BACKTRACK;
      }
      return;
    }
    this.entry = events.first();
    this.phase = SCAN;
  }

  /** Linearizes the operation of call entry `entry`, leading to state `next` (already in bits). */
  private push(entry: number, next: State, forced: boolean): void {
    const op = this.events.op[entry] as number;
    this.stackEntries.push(entry);
    this.stackStates.push(this.state);
    this.stackForced.push(forced);
    const expiring = this.expiring.length > 0;
    if (expiring) {
      this.stackExpiry.push(this.expired, this.latestCallMs, this.expiredEntries.length);
    }
    this.state = next;
    this.events.lift(entry);
    if (this.optional[op] !== true) {
      this.required--;
      if (expiring) this.expire(this.callMs[op] as number);
    }
    this.phase = FRESH;
  }

  /**
   * A completed operation called at `callMs` was just linearized: an optional operation whose
   * expiry time is before that call can no longer change the state (Operation.expiresMs), so its
   * call entry leaves the event list until this step is undone.
   */
  private expire(callMs: number): void {
    if (callMs <= this.latestCallMs) return;
    this.latestCallMs = callMs;
    const { expiring, expiryMs } = this;
    while (this.expired < expiring.length) {
      const op = expiring[this.expired] as number;
      if ((expiryMs[op] as number) >= callMs) break;
      this.expired++;
      if (this.linearized(op)) continue;
      const entry = this.events.callOf[op] as number;
      this.events.lift(entry);
      this.expiredEntries.push(entry);
    }
  }

  /** Undoes the last linearization; false when there is none (the partition is illegal). */
  private pop(): boolean {
    const back = this.stackEntries.pop();
    if (back === undefined) return false;
    const op = this.events.op[back] as number;
    this.state = this.stackStates.pop() as State;
    const forced = this.stackForced.pop() as boolean;
    if (this.expiring.length > 0) {
      const entriesBefore = this.stackExpiry.pop() as number;
      while (this.expiredEntries.length > entriesBefore) {
        this.events.unlift(this.expiredEntries.pop() as number);
      }
      this.latestCallMs = this.stackExpiry.pop() as number;
      this.expired = this.stackExpiry.pop() as number;
    }
    this.unmark(op);
    this.events.unlift(back);
    if (this.optional[op] !== true) this.required++;
    if (!forced) {
      // Try the next candidate after the one just undone.
      this.entry = this.events.next[back] as number;
      this.phase = SCAN;
    }
    return true;
  }

  /** Adds `op` to the linearized set. */
  private mark(op: number): void {
    if (this.optional[op] === true) this.optionalBits.add(this.bitOf[op] as number);
    else this.bits.add(this.bitOf[op] as number);
  }

  private unmark(op: number): void {
    if (this.optional[op] === true) this.optionalBits.remove(this.bitOf[op] as number);
    else this.bits.remove(this.bitOf[op] as number);
  }

  private linearized(op: number): boolean {
    const bit = this.bitOf[op] as number;
    return this.optional[op] === true ? this.optionalBits.has(bit) : this.bits.has(bit);
  }

  /** Records the configuration the linearized sets and `next` make; false if it is dominated. */
  private remember(next: State): boolean {
    const hash = (this.bits.hash ^ this.model.hash(next)) >>> 0;
    return this.memo.add(hash, this.bits, this.optionalBits, next);
  }

  private recordFailure(blockedOp: number): void {
    const depth = this.stackEntries.length;
    if (this.failure !== undefined && depth <= this.failure.depth) return;
    this.failure = {
      depth,
      blockedOp,
      state: this.state,
      lastOps: this.stackEntries
        .slice(-FAILURE_CONTEXT_OPS)
        .map((e) => this.events.op[e] as number),
    };
  }

  private finish(): SearchResult<State> {
    assert(
      this.ops.every((_, i) => this.optional[i] === true || this.linearized(i)),
      'search: finished with a finite-return operation unlinearized',
    );
    return { verdict: 'ok' };
  }
}

/**
 * For each optional operation, the previous optional operation with the same effect key in the
 * event list's order of calls (time, then index), or NO_TWIN; all NO_TWIN without effect keys.
 */
function twinsBefore<State, Input, Output>(
  model: Model<State, Input, Output>,
  ops: readonly Operation<Input, Output>[],
  optional: readonly boolean[],
): Int32Array {
  const twins = new Int32Array(ops.length).fill(NO_TWIN);
  const effectKey = model.effectKey;
  if (effectKey === undefined) return twins;
  const order: number[] = [];
  optional.forEach((opt, i) => {
    if (opt) order.push(i);
  });
  const callOf = (i: number): number => (ops[i] as Operation<Input, Output>).call;
  order.sort((a, b) => callOf(a) - callOf(b) || a - b);
  const last = new Map<string, number>();
  for (const i of order) {
    const key = effectKey((ops[i] as Operation<Input, Output>).input);
    twins[i] = last.get(key) ?? NO_TWIN;
    last.set(key, i);
  }
  return twins;
}
