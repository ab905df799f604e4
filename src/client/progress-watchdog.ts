// The progress watchdog shared by LeaderElector and Lock.run: a holder that heartbeats (its
// session renews) but makes no progress is as bad as a dead one, and worse, because nobody takes
// over. Kafka separates the two for the same reason: session.timeout.ms bounds the heartbeat,
// max.poll.interval.ms bounds the time between two polls (KIP-62). Here the holder's callback
// calls `progress()`; if it does not within `deadlineMs` (counted from the start of the hold,
// then from each call), the watchdog fires once: the holder is STUCK (docs/stuck-leaders.md).
//
// Time is the injected monotonic Clock (clock.ts), so tests drive it with a ManualClock.
import type { Cancel, Clock } from './clock.js';

export class ProgressWatchdog {
  readonly deadlineMs: number;
  readonly #clock: Clock;
  readonly #onStuck: () => void;
  #cancel: Cancel | undefined;
  #stuck = false;
  #stopped = false;

  /** Starts counting now; `onStuck` runs at most once, from a clock timer. */
  constructor(clock: Clock, deadlineMs: number, onStuck: () => void) {
    if (!(deadlineMs > 0) || !Number.isFinite(deadlineMs)) {
      throw new RangeError(`progressDeadlineMs must be a finite number > 0 (got ${deadlineMs})`);
    }
    this.deadlineMs = deadlineMs;
    this.#clock = clock;
    this.#onStuck = onStuck;
    this.#arm();
  }

  /** True once the deadline passed without progress (then for good). */
  get stuck(): boolean {
    return this.#stuck;
  }

  /** The holder made progress: the deadline counts again from now. No-op once stuck or stopped. */
  progress(): void {
    if (this.#stuck || this.#stopped) return;
    this.#arm();
  }

  /** The hold ended (the callback settled): no verdict any more. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
  }

  #arm(): void {
    this.#cancel?.();
    this.#cancel = this.#clock.after(this.deadlineMs, () => {
      this.#cancel = undefined;
      if (this.#stopped || this.#stuck) return;
      this.#stuck = true;
      this.#onStuck();
    });
  }
}

/** What the holder's callback calls; a no-op without a deadline. */
export type Progress = () => void;
