// A clock the test moves by hand: one-shot timers run only when it advances the clock, each at
// its own time, in order. Periodic timers are not offered (the code under test uses none).
import type { Cancel, Clock } from '../../src/core/base/clock.js';

export class HandClock implements Clock {
  private timers: { at: number; fn: () => void }[] = [];

  constructor(public now = 0) {}

  nowMs(): number {
    return this.now;
  }

  after(delayMs: number, fn: () => void): Cancel {
    const t = { at: this.now + delayMs, fn };
    this.timers.push(t);
    return () => {
      this.timers = this.timers.filter((x) => x !== t);
    };
  }

  every(): Cancel {
    throw new Error('HandClock: periodic timers are not supported');
  }

  /** One-shot timers armed and not yet run. */
  get pending(): number {
    return this.timers.length;
  }

  /** Move to `ms`, running every timer due by then at its own time. */
  runDue(ms: number): void {
    for (let t = this.next(ms); t !== undefined; t = this.next(ms)) t.fn();
    this.now = ms;
  }

  /** As runDue, letting promise continuations run after each timer (async code under test). */
  async advanceTo(ms: number): Promise<void> {
    await settle();
    for (let t = this.next(ms); t !== undefined; t = this.next(ms)) {
      t.fn();
      await settle();
    }
    this.now = ms;
    await settle();
  }

  /** Remove and return the earliest timer due by `ms`, with the clock moved to its time. */
  private next(ms: number): { at: number; fn: () => void } | undefined {
    let first: { at: number; fn: () => void } | undefined;
    for (const t of this.timers)
      if (t.at <= ms && (first === undefined || t.at < first.at)) first = t;
    if (first === undefined) return undefined;
    this.timers = this.timers.filter((x) => x !== first);
    this.now = first.at;
    return first;
  }
}

/** Enough microtask turns for a chain of awaits to run to its next wait. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
