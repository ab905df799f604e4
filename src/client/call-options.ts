// Cancellation and deadlines for every async call: a call takes `{ signal, timeoutMs }`, rejects
// with `signal.reason` when the caller aborts, with a TimeoutError when its own deadline passes,
// with a ClientClosedError when the client is closed meanwhile, and removes every listener and
// timer it added once it settles.
import { ClientClosedError, TimeoutError } from './errors.js';

export interface CallOptions {
  /** Aborts the call; it then rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
  /**
   * Bound on the whole call, retries and failover included, in milliseconds. The default is the
   * client's `defaultTimeoutMs` (5 000 ms unless configured; see ClientOptions).
   */
  readonly timeoutMs?: number;
}

/** One call's cancellation: aborted by the caller, by its deadline or by the client's close. */
export class CallScope {
  readonly signal: AbortSignal;
  /** On the monotonic clock (performance.now()): a wall-clock step moves no deadline. */
  readonly deadlineMs: number;
  readonly #controller = new AbortController();
  readonly #cleanup: Array<() => void> = [];
  #timedOut = false;

  constructor(options: CallOptions, defaultTimeoutMs: number, closed: AbortSignal, what: string) {
    this.signal = this.#controller.signal;
    const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    this.deadlineMs = performance.now() + timeoutMs;
    const user = options.signal;
    if (user?.aborted) {
      this.#controller.abort(user.reason);
      return;
    }
    if (closed.aborted) {
      this.#controller.abort(new ClientClosedError('CLIENT_CLOSED', `${what}: client is closed`));
      return;
    }
    const onUser = (): void => this.#controller.abort(user?.reason);
    const onClosed = (): void =>
      this.#controller.abort(new ClientClosedError('CLIENT_CLOSED', `${what}: client closed`));
    user?.addEventListener('abort', onUser, { once: true });
    closed.addEventListener('abort', onClosed, { once: true });
    this.#cleanup.push(
      () => user?.removeEventListener('abort', onUser),
      () => closed.removeEventListener('abort', onClosed),
    );
    // An infinite bound (a wait that only the caller or a close may end) sets no timer.
    if (Number.isFinite(timeoutMs)) {
      const timer = setTimeout(() => {
        this.#timedOut = !this.signal.aborted;
        this.#controller.abort(
          new TimeoutError('TIMEOUT', `${what}: timed out after ${timeoutMs} ms`),
        );
      }, timeoutMs);
      this.#cleanup.push(() => clearTimeout(timer));
    }
  }

  /** The call ended by its own deadline (its reason is this scope's TimeoutError). */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** Milliseconds left before the deadline (0 when past). */
  remainingMs(): number {
    return Math.max(0, this.deadlineMs - performance.now());
  }

  /** Throws the abort reason if the call is over. */
  throwIfAborted(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }

  /** Waits `ms` unless the call is aborted first (then rejects with the reason). */
  sleep(ms: number): Promise<void> {
    return sleep(ms, this.signal);
  }

  dispose(): void {
    for (const f of this.#cleanup.splice(0)) f();
  }
}

/** setTimeout as a promise that rejects with `signal.reason` on abort and cleans up after itself. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
