// The monotonic clock the session measures its lease with, injectable so that tests (and users'
// own fault-injection tests) can drive time by hand.
//
// Only monotonic time is used: wall-clock jumps (NTP, a VM restore) must not lengthen or shorten a
// lease (docs/leases-and-time.md, "The clock assumption").

/** A cancellable timer handle. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Monotonic milliseconds since an arbitrary origin (performance.now() by default). */
  nowMs(): number;
  /** Call `fn` once, `delayMs` from now. The handle must not keep the process alive. */
  setTimer(fn: () => void, delayMs: number): Timer;
}

/** performance.now() and unref'd setTimeout. */
export const systemClock: Clock = {
  nowMs: () => performance.now(),
  setTimer(fn, delayMs) {
    const t = setTimeout(fn, Math.max(0, delayMs));
    t.unref();
    return { cancel: () => clearTimeout(t) };
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

  setTimer(fn: () => void, delayMs: number): Timer {
    const id = this.#seq++;
    this.#timers.set(id, { atMs: this.#nowMs + Math.max(0, delayMs), fn });
    return { cancel: () => this.#timers.delete(id) };
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
