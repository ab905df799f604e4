// `run(fn)` of a lock, on any backend (Lock, and PgLock in src/pg): acquire has happened; run the
// critical section, then release once it has settled — never while it may still run. With a
// progress deadline (docs/stuck-leaders.md) a section that does not call `progress()` in time is
// STUCK: the hold's signal aborts with RecipeError STUCK and its session stops renewing
// (Session.abandon), so the lease runs out on the grantor and the next waiter is granted; the
// stuck section is still not released (the release after it settles is fenced and finds the
// hold gone).
import { ProgressWatchdog, type Progress } from './progress-watchdog.js';
import { RecipeError } from './recipe-errors.js';
import type { Session } from './session.js';

/** What runHold needs of a grant. */
export interface RunnableHold {
  readonly token: bigint;
  abort(reason: RecipeError): void;
  release(): Promise<boolean>;
}

/** Throws RangeError unless `ms` is undefined or a finite number > 0. */
export function checkProgressDeadline(label: string, ms: number | undefined): void {
  if (ms !== undefined && !(ms > 0 && Number.isFinite(ms))) {
    throw new RangeError(`${label}: progressDeadlineMs must be a finite number > 0`);
  }
}

/**
 * Run `fn` under `hold`, then release it. `fn`'s error is rethrown (after the release); a
 * release error is thrown only if `fn` succeeded. `onStuck` reports (traces) a stuck verdict.
 */
export async function runHold<T>(
  hold: RunnableHold,
  session: Session,
  what: string,
  progressDeadlineMs: number | undefined,
  onStuck: (deadlineMs: number) => void,
  fn: (progress: Progress) => Promise<T> | T,
): Promise<T> {
  const watchdog =
    progressDeadlineMs === undefined
      ? undefined
      : new ProgressWatchdog(session.clock, progressDeadlineMs, () => {
          hold.abort(
            new RecipeError('STUCK', `${what}: no progress within ${progressDeadlineMs} ms`),
          );
          session.abandon();
          onStuck(progressDeadlineMs);
        });
  const progress: Progress = () => watchdog?.progress();
  let result: T;
  try {
    result = await fn(progress);
  } catch (e) {
    watchdog?.stop();
    await hold.release().catch(() => false);
    throw e;
  }
  watchdog?.stop();
  await hold.release();
  return result;
}
