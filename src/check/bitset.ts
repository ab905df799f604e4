// The set of operations linearized so far in one search, with an incrementally maintained Zobrist
// hash so the memo-table key costs O(1) per step instead of O(n / 32). Lowe (2017, §4) keys the memo
// table on (linearized set, state); Porcupine keys it on hash(bitset) XOR hash(state).
//
// Snapshots, one per memo entry, are stored compressed: the number of leading words that are full
// and the words from there to the last non-empty one. A search that numbers operations in call
// order linearizes them roughly in that order, so a snapshot is a handful of words however long
// the history (a plain copy of a 20,000-operation set is 2.5 KB, and the copies were most of the
// memory and the collector's time).

import { assert, prng } from '../core/base/index.js';

/** Fixed so that runs, and the order in which equal-hash buckets fill, are reproducible. */
const ZOBRIST_SEED = 0x1b873593;

/** A word with every bit set. */
const FULL = 0xffff_ffff;
/** The snapshot of every empty set, shared: snapshots are never written to. */
const EMPTY_SNAPSHOT = new Uint32Array(1);

export class Bitset {
  readonly words: Uint32Array;
  /** XOR of the Zobrist key of every member. */
  hash = 0;
  private readonly keys: Uint32Array;
  /** How many leading words are full. */
  private fullWords = 0;
  /** The index of the last non-empty word, -1 if none. */
  private lastWord = -1;

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

  /** A frozen, compressed copy of the members, for the memo table: [full words, tail words…]. */
  snapshot(): Uint32Array {
    if (this.lastWord === -1) return EMPTY_SNAPSHOT;
    const tail = Math.max(0, this.lastWord - this.fullWords + 1);
    const out = new Uint32Array(1 + tail);
    out[0] = this.fullWords;
    out.set(this.words.subarray(this.fullWords, this.fullWords + tail), 1);
    return out;
  }

  equalsSnapshot(other: Uint32Array): boolean {
    const full = this.fullWords;
    if (other[0] !== full || other.length !== 1 + Math.max(0, this.lastWord - full + 1)) {
      return false;
    }
    const w = this.words;
    for (let j = other.length - 1; j >= 1; j--) if (other[j] !== w[full + j - 1]) return false;
    return true;
  }

  /** True when every member of the snapshot `other` is a member of this set. */
  containsSnapshot(other: Uint32Array): boolean {
    const full = other[0] as number;
    if (this.fullWords < full) return false;
    const w = this.words;
    for (let j = other.length - 1; j >= 1; j--) {
      if (((other[j] as number) & ~(w[full + j - 1] as number)) !== 0) return false;
    }
    return true;
  }

  /** True when every member of this set is a member of the snapshot `other`. */
  isContainedIn(other: Uint32Array): boolean {
    const full = other[0] as number;
    const end = full + other.length - 1;
    if (this.lastWord >= end) return false;
    const w = this.words;
    for (let i = Math.max(full, 0); i <= this.lastWord; i++) {
      if (((w[i] as number) & ~(other[1 + i - full] as number)) !== 0) return false;
    }
    return true;
  }

  private toggle(i: number): void {
    const w = i >>> 5;
    const word = ((this.words[w] as number) ^ (1 << (i & 31))) >>> 0;
    this.words[w] = word;
    this.hash = (this.hash ^ (this.keys[i] as number)) >>> 0;
    if (word === FULL && w === this.fullWords) {
      while (this.fullWords < this.words.length && this.words[this.fullWords] === FULL) {
        this.fullWords++;
      }
    } else if (word !== FULL && w < this.fullWords) {
      this.fullWords = w;
    }
    if (word !== 0 && w > this.lastWord) {
      this.lastWord = w;
    } else if (word === 0 && w === this.lastWord) {
      while (this.lastWord >= 0 && this.words[this.lastWord] === 0) this.lastWord--;
    }
  }
}
