// The replica's Clock on the machine's monotonic clock. Wall-clock time is never used for
// durations (a clock step must not expire a lease or start an election).
//
// CLOCK_MONOTONIC (process.hrtime), not performance.now(): the latter starts near 0 in every new
// process, and peers keep this member's clock readings across its restart. A forwarded request's
// deadline is put on the leader's clock by those readings, so a leader restarted on the same
// machine must go on reading the same clock, or a deadline set for its previous process looks
// far in the future and is never enforced. Both keep counting while the process is stopped.
import type { Cancel, Clock } from '../replica/io.js';

const NS_PER_MS = 1_000_000n;

export const monotonicClock: Clock = {
  nowMs: () => {
    const ns = process.hrtime.bigint();
    return Number(ns / NS_PER_MS) + Number(ns % NS_PER_MS) / 1e6;
  },
  every(intervalMs: number, fn: () => void): Cancel {
    const t = setInterval(fn, intervalMs);
    return () => clearInterval(t);
  },
  after(delayMs: number, fn: () => void): Cancel {
    if (delayMs <= 0) {
      // "After the current turn": once the I/O callbacks already due have run (batching).
      const i = setImmediate(fn);
      return () => clearImmediate(i);
    }
    const t = setTimeout(fn, delayMs);
    return () => clearTimeout(t);
  },
};
