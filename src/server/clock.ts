// The replica's Clock on the process's monotonic clock. Wall-clock time is never used for
// durations (a clock step must not expire a lease or start an election).
import type { Cancel, Clock } from '../replica/io.js';

export const monotonicClock: Clock = {
  nowMs: () => performance.now(),
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
