// Lowe's memoisation (Lowe 2017, §4): a configuration of the search is the set of operations
// linearized so far plus the model state it led to. The rest of the search depends only on that
// pair, so reaching a pair a second time can only repeat a failure and is cut off. This is what
// turns Wing & Gong's exponential tree search into something practical.
//
// Keys are numbers (bitset hash XOR state hash) and buckets compare with real equality. An
// earlier variant keyed on strings exhausted a 4 GB heap on Porcupine's c50-bad history
// (verification.md §3.2): never stringify states.

import type { Bitset } from './bitset.js';

interface MemoEntry<State> {
  readonly words: Uint32Array;
  readonly state: State;
  /** The next entry with the same hash. */
  readonly next: MemoEntry<State> | undefined;
}

export class MemoTable<State> {
  private readonly buckets = new Map<number, MemoEntry<State>>();
  private entries = 0;

  constructor(private readonly equal: (a: State, b: State) => boolean) {}

  get size(): number {
    return this.entries;
  }

  /**
   * Records the configuration (`bits`, `state`) under `hash`; false when it was already there.
   * `bits` must already hold the operation just linearized.
   */
  add(hash: number, bits: Bitset, state: State): boolean {
    const head = this.buckets.get(hash);
    for (let e = head; e !== undefined; e = e.next) {
      if (bits.equalsSnapshot(e.words) && this.equal(e.state, state)) return false;
    }
    this.buckets.set(hash, { words: bits.snapshot(), state, next: head });
    this.entries++;
    return true;
  }
}
