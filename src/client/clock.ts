// The monotonic clock the session measures its lease with, injectable so that tests (and users'
// own fault-injection tests) can drive time by hand.
//
// Only monotonic time is used: wall-clock jumps (NTP, a VM restore) must not lengthen or shorten a
// lease (docs/leases-and-time.md, "The clock assumption").

import type { Cancel, Clock } from '../core/base/clock.js';

export type { Cancel, Clock };

/** performance.now() and unref'd timers: the session's timers never keep a process alive. */
export const systemClock: Clock = {
  nowMs: () => performance.now(),
  after(delayMs, fn) {
    const t = setTimeout(fn, Math.max(0, delayMs));
    t.unref();
    return () => clearTimeout(t);
  },
  every(intervalMs, fn) {
    const t = setInterval(fn, intervalMs);
    t.unref();
    return () => clearInterval(t);
  },
};

/**
 * A clock that moves only when told to: `advance(ms)` runs the timers that fall due, in due-time
 * order (ties in creation order), each at its own due time.
 */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  readonly #timers = new Map<number, { atMs: number; fn: () => void }>();

  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  after(delayMs: number, fn: () => void): Cancel {
    const id = this.#seq++;
    this.#timers.set(id, { atMs: this.#nowMs + Math.max(0, delayMs), fn });
    return () => {
      this.#timers.delete(id);
    };
  }

  every(intervalMs: number, fn: () => void): Cancel {
    let cancelled = false;
    let cancel: Cancel = () => {};
    const arm = (): void => {
      cancel = this.after(intervalMs, () => {
        if (cancelled) return;
        arm();
        fn();
      });
    };
    arm();
    return () => {
      cancelled = true;
      cancel();
    };
  }

  /** Pending timers (for assertions in tests). */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Move time forward by `ms`, running every timer that falls due on the way. */
  advance(ms: number): void {
    const endMs = this.#nowMs + ms;
    for (;;) {
      let next: [number, { atMs: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].atMs <= endMs && (next === undefined || entry[1].atMs < next[1].atMs)) {
          next = entry;
        }
      }
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#nowMs = Math.max(this.#nowMs, next[1].atMs);
      next[1].fn();
    }
    this.#nowMs = endMs;
  }
}
