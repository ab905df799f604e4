// Waiting for a condition: one bounded poll loop for everything that waits on another process (a
// member's readiness, a child's output, a port). The deadline bounds a hang; nothing uses the
// time it took as a verdict.

/** A poll ran out of time; `what` says what it waited for, `last` what it saw last. */
export class PollTimeoutError extends Error {
  override readonly name = 'PollTimeoutError';
  readonly code = 'POLL_TIMEOUT';
}

export interface PollOptions {
  /** Give up after this long (ms). */
  readonly timeoutMs: number;
  /** Pause between probes (ms); default 50. */
  readonly intervalMs?: number;
  /** Stops the wait early; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** What the timeout's message adds after `what` (the last probe's view, logs). */
  readonly describe?: () => string;
}

const intervalMsDefault = 50;

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error(`aborted: ${String(reason)}`);
}

/**
 * Call `probe` until it returns something other than undefined and return that; throw a
 * PollTimeoutError naming `what` once `timeoutMs` has passed. A probe that throws ends the wait
 * with its error (that is how a caller says "this will never happen", e.g. the process exited).
 */
export async function pollFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  options: PollOptions,
): Promise<T> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    if (options.signal?.aborted === true) throw abortReason(options.signal);
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() >= deadline) {
      const more = options.describe?.() ?? '';
      throw new PollTimeoutError(
        `not within ${options.timeoutMs} ms: ${what}${more === '' ? '' : `\n${more}`}`,
      );
    }
    await sleep(options.intervalMs ?? intervalMsDefault, options.signal);
  }
}

/** `pollFor` for a condition: resolves once `cond` holds. */
export async function pollUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  options: PollOptions,
): Promise<void> {
  await pollFor(what, async () => ((await cond()) ? true : undefined), options);
}
