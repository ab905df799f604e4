// Lowe's memoisation (Lowe 2017, §4): a configuration of the search is the set of operations
// linearized so far plus the model state it led to. The rest of the search depends only on that
// pair, so reaching a pair a second time can only repeat a failure and is cut off. This is what
// turns Wing & Gong's exponential tree search into something practical.
//
// With unknown-outcome operations the table also cuts off dominated configurations. Split the
// linearized set into its completed operations and its unknown-outcome ones. Two configurations
// with the same completed set and state have the same candidates (only completed operations have
// return entries, which decide what may go next, and only they make unknown-outcome operations
// expire, search.ts) and the same operations left to place, except
// that the one with fewer unknown-outcome operations used has more of them still available, each
// of which it may leave unused. So every continuation of the one with more is one of the one with
// fewer: once a configuration is recorded, any configuration with the same completed set and
// state and a superset of its unknown-outcome operations is cut off too (whether the recorded one
// failed or is still being explored above it). Without this, a failing stretch is explored once
// per subset of the unknown writes the search could have spent in it.
//
// Keys are numbers (hash of the completed set XOR state hash) and buckets compare with real
// equality. An earlier variant keyed on strings exhausted a 4 GB heap on Porcupine's c50-bad
// history: never stringify states.

import type { Bitset } from './bitset.js';

interface MemoEntry<State> {
  readonly required: Uint32Array;
  readonly state: State;
  /**
   * The unknown-outcome sets recorded with this completed set and state, none containing another:
   * one set (by far the common case, kept without an array) or several.
   */
  optionals: Uint32Array | Uint32Array[];
  /** The next entry with the same hash. */
  readonly next: MemoEntry<State> | undefined;
}

export class MemoTable<State> {
  private readonly buckets = new Map<number, MemoEntry<State>>();
  private entries = 0;

  constructor(private readonly equal: (a: State, b: State) => boolean) {}

  /** Configurations recorded (unknown-outcome sets, over all entries). */
  get size(): number {
    return this.entries;
  }

  /**
   * Records the configuration (`required` ∪ `optional`, `state`) under `hash`, which must be
   * derived from `required` and `state` only; false when it, or a configuration that dominates it,
   * was already there. The sets must already hold the operation just linearized.
   */
  add(hash: number, required: Bitset, optional: Bitset, state: State): boolean {
    const head = this.buckets.get(hash);
    for (let e = head; e !== undefined; e = e.next) {
      if (!required.equalsSnapshot(e.required) || !this.equal(e.state, state)) continue;
      if (dominated(optional, e.optionals)) return false;
      // The new set is not dominated; recorded sets that contain it are dominated by it.
      const recorded = Array.isArray(e.optionals) ? e.optionals : [e.optionals];
      const kept = recorded.filter((r) => !optional.isContainedIn(r));
      this.entries += 1 - (recorded.length - kept.length);
      kept.push(optional.snapshot());
      e.optionals = kept.length === 1 ? (kept[0] as Uint32Array) : kept;
      return true;
    }
    this.buckets.set(hash, {
      required: required.snapshot(),
      state,
      optionals: optional.snapshot(),
      next: head,
    });
    this.entries++;
    return true;
  }
}

/** True when one of the recorded sets is contained in `optional` (no allocation: the common path). */
function dominated(optional: Bitset, recorded: Uint32Array | Uint32Array[]): boolean {
  if (!Array.isArray(recorded)) return optional.containsSnapshot(recorded);
  for (const r of recorded) if (optional.containsSnapshot(r)) return true;
  return false;
}
