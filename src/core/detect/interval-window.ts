// A bounded window of heartbeat inter-arrival times with running mean and variance: the "sliding
// window" of Hayashibara §3.2, and Akka's and Cassandra's max-sample-size. Adding and querying are
// O(1); the state is O(capacity) per monitored peer.

import { assert } from '../base/index.js';
import type { IntervalStats } from './phi-formula.js';

/** Largest window any detector may ask for: Akka's and Cassandra's 1000, with room to spare. */
export const INTERVAL_WINDOW_CAPACITY_MAX = 10_000;

export class IntervalWindow implements IntervalStats {
  private readonly samples: Float64Array;
  private head = 0;
  private size = 0;
  private sum = 0;
  private sumSquares = 0;
  private addsSinceRecompute = 0;

  constructor(readonly capacity: number) {
    assert(
      Number.isInteger(capacity) && capacity >= 1 && capacity <= INTERVAL_WINDOW_CAPACITY_MAX,
      () => `interval window capacity ${capacity} out of [1, ${INTERVAL_WINDOW_CAPACITY_MAX}]`,
    );
    this.samples = new Float64Array(capacity);
  }

  get count(): number {
    return this.size;
  }

  add(intervalMs: number): void {
    assert(Number.isFinite(intervalMs) && intervalMs >= 0, () => `bad interval ${intervalMs}`);
    if (this.size === this.capacity) {
      const old = this.samples[this.head] as number;
      this.sum -= old;
      this.sumSquares -= old * old;
    } else {
      this.size++;
    }
    this.samples[this.head] = intervalMs;
    this.head = (this.head + 1) % this.capacity;
    this.sum += intervalMs;
    this.sumSquares += intervalMs * intervalMs;
    // Running sums drift by rounding; recompute them exactly once per window's worth of adds.
    if (++this.addsSinceRecompute >= this.capacity) this.recompute();
  }

  clear(): void {
    this.head = 0;
    this.size = 0;
    this.sum = 0;
    this.sumSquares = 0;
    this.addsSinceRecompute = 0;
  }

  get meanMs(): number {
    return this.size === 0 ? 0 : this.sum / this.size;
  }

  /** Population variance, as Akka and the φ paper compute it. */
  get varianceMs2(): number {
    if (this.size === 0) return 0;
    const m = this.sum / this.size;
    return Math.max(0, this.sumSquares / this.size - m * m);
  }

  get stdDevMs(): number {
    return Math.sqrt(this.varianceMs2);
  }

  /** The samples, oldest first (for diagnostics and tests). */
  values(): number[] {
    const out: number[] = [];
    const start = (this.head - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++)
      out.push(this.samples[(start + i) % this.capacity] as number);
    return out;
  }

  private recompute(): void {
    this.addsSinceRecompute = 0;
    let s = 0;
    let s2 = 0;
    for (const v of this.values()) {
      s += v;
      s2 += v * v;
    }
    this.sum = s;
    this.sumSquares = s2;
  }
}
