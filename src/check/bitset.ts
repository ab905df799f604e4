// The set of operations linearized so far in one search, with an incrementally maintained Zobrist
// hash so the memo-table key costs O(1) per step instead of O(n / 32). Lowe (2017, §4) keys the memo
// table on (linearized set, state); Porcupine keys it on hash(bitset) XOR hash(state).

import { assert, prng } from '../core/base/index.js';

/** Fixed so that runs, and the order in which equal-hash buckets fill, are reproducible. */
const ZOBRIST_SEED = 0x1b873593;

export class Bitset {
  readonly words: Uint32Array;
  /** XOR of the Zobrist key of every member. */
  hash = 0;
  private readonly keys: Uint32Array;

  constructor(readonly size: number) {
    assert(Number.isInteger(size) && size >= 0, () => `bitset size ${size}`);
    this.words = new Uint32Array(Math.ceil(size / 32));
    this.keys = new Uint32Array(size);
    const random = prng(ZOBRIST_SEED);
    for (let i = 0; i < size; i++) this.keys[i] = random.int(0, 0x1_0000_0000);
  }

  has(i: number): boolean {
    return ((this.words[i >>> 5] as number) & (1 << (i & 31))) !== 0;
  }

  /** The hash the set would have with `i` toggled, without toggling it. */
  hashWith(i: number): number {
    return (this.hash ^ (this.keys[i] as number)) >>> 0;
  }

  add(i: number): void {
    assert(!this.has(i), () => `bitset: ${i} already present`);
    this.toggle(i);
  }

  remove(i: number): void {
    assert(this.has(i), () => `bitset: ${i} not present`);
    this.toggle(i);
  }

  /** A frozen copy of the members, for the memo table. */
  snapshot(): Uint32Array {
    return this.words.slice();
  }

  equalsSnapshot(other: Uint32Array): boolean {
    const w = this.words;
    for (let i = w.length - 1; i >= 0; i--) if (w[i] !== other[i]) return false;
    return true;
  }

  private toggle(i: number): void {
    const w = i >>> 5;
    this.words[w] = (this.words[w] as number) ^ (1 << (i & 31));
    this.hash = (this.hash ^ (this.keys[i] as number)) >>> 0;
  }
}
