// Bounded waits for tests, on the launcher's poll (src/launcher/poll.ts): each waits for a
// condition with a deadline that bounds a hang and fails the test with what it waited for. No
// test uses how long a wait took as a verdict.
import { pollFor, pollUntil, PollTimeoutError } from '../../src/launcher/poll.js';

export { PollTimeoutError, sleep } from '../../src/launcher/poll.js';

/** Named limit: how long a poll waits for something that must happen eventually. */
export const eventuallyMsDefault = 15_000;
/** Pause between checks of an in-memory condition (cheap to check). */
const untilIntervalMs = 10;
/** Pause between probes that talk to a server. */
const probeIntervalMs = 50;

/** Wait until `cond` holds; fail after `timeoutMs` naming `what`. */
export function until(
  what: string,
  cond: () => boolean,
  timeoutMs: number = eventuallyMsDefault,
): Promise<void> {
  return pollUntil(what, cond, { timeoutMs, intervalMs: untilIntervalMs });
}

/**
 * Call `probe` until it returns a value other than undefined; fail after `timeoutMs` naming
 * `what`.
 */
export function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number = eventuallyMsDefault,
): Promise<T> {
  return pollFor(what, probe, { timeoutMs, intervalMs: probeIntervalMs });
}

/**
 * Wait until `cond` holds or `timeoutMs` passes, whichever is first; true if it held. For a
 * scenario step that goes on either way (its verdict is judged later).
 */
export async function waitAtMost(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  try {
    await until('a condition', cond, timeoutMs);
    return true;
  } catch (e) {
    if (e instanceof PollTimeoutError) return false;
    throw e;
  }
}

/** How a wait on arrivals ends: with a value, with an error, or not yet (undefined). */
export type Verdict<T> = { readonly done: T } | { readonly fail: Error } | undefined;

/**
 * Waits on what arrives (a child's lines, a stream's messages): each wait asks its `judge` now
 * and on every `wake()`, and fails with `timedOut()` after `timeoutMs`, a bound on a hang.
 */
export class Wakeups {
  readonly #checks = new Set<() => void>();

  wake(): void {
    for (const check of [...this.#checks]) check();
  }

  wait<T>(judge: () => Verdict<T>, timeoutMs: number, timedOut: () => Error): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const verdict = judge();
        if (verdict === undefined) return;
        finish();
        if ('done' in verdict) resolve(verdict.done);
        else reject(verdict.fail);
      };
      const timer = setTimeout(() => {
        finish();
        reject(timedOut());
      }, timeoutMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.#checks.delete(check);
      };
      this.#checks.add(check);
      check();
    });
  }
}
