// CallOptions for statements: pg's query() takes no AbortSignal, so a call races its statement
// against the caller's signal and its own deadline. The statement itself runs on; what it decides
// is decided by the database either way, which is why every deciding statement is idempotent or
// fenced on a token (an abandoned take may still succeed: the taker then never uses it, and the
// row is taken over when its session ends).
import { CallScope, type CallOptions } from '../client/call-options.js';

/** Statements close with the backend by their own signal; this scope's close never fires. */
const neverClosed = new AbortController().signal;

/** Bound on one call when the caller gives no timeoutMs, in ms (the SDK client's default). */
export const callTimeoutMsDefault = 5_000;

export async function withCall<T>(
  what: string,
  options: CallOptions,
  run: () => Promise<T>,
  defaultTimeoutMs = callTimeoutMsDefault,
): Promise<T> {
  const scope = new CallScope(options, defaultTimeoutMs, neverClosed, what);
  try {
    scope.throwIfAborted();
    const aborted = new Promise<never>((_, reject) =>
      scope.signal.addEventListener('abort', () => reject(scope.signal.reason as Error), {
        once: true,
      }),
    );
    return await Promise.race([run(), aborted]);
  } finally {
    scope.dispose();
  }
}
