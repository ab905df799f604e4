// CallOptions for statements: pg's query() takes no AbortSignal, so a call races its statement
// against the caller's signal and its own deadline. The statement itself runs on; what it decides
// is decided by the database either way, which is why every deciding statement is idempotent or
// fenced on a token (an abandoned take may still succeed: the taker then never uses it, and the
// row is taken over when its session ends).
import type { CallOptions } from '../client/call-options.js';
import { TimeoutError } from '../client/errors.js';

/** Bound on one call when the caller gives no timeoutMs, in ms (the SDK client's default). */
export const callTimeoutMsDefault = 5_000;

export function withCall<T>(
  what: string,
  options: CallOptions,
  run: () => Promise<T>,
  defaultTimeoutMs = callTimeoutMsDefault,
): Promise<T> {
  const signal = options.signal;
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    // An infinite bound leaves the call to the caller's signal alone.
    const timer = Number.isFinite(timeoutMs)
      ? setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          reject(new TimeoutError('TIMEOUT', `${what}: timed out after ${timeoutMs} ms`));
        }, timeoutMs)
      : undefined;
    signal?.addEventListener('abort', onAbort, { once: true });
    run().then(
      (v) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
