// What a long wait (acquire, campaign) is bounded by: the caller's signal and deadline, the
// session's validity and expiry, and the rule of one queue entry per (lease, name) per process.
import type { CallOptions } from './call-options.js';
import { SessionExpiredError, TimeoutError } from './errors.js';
import { RecipeError } from './recipe-errors.js';
import { linkAbort } from './recipe-signal.js';
import type { Session } from './session.js';

/**
 * The caller's signal plus an optional deadline, for calls that may wait a long time (acquire,
 * campaign): without `timeoutMs` they wait until the signal aborts or the session dies.
 */
export class WaitScope {
  readonly #controller = new AbortController();
  readonly #cleanup: Array<() => void> = [];
  readonly signal: AbortSignal = this.#controller.signal;

  constructor(options: CallOptions, what: string) {
    if (options.signal !== undefined)
      this.#cleanup.push(linkAbort(options.signal, this.#controller));
    if (options.timeoutMs !== undefined && !this.signal.aborted) {
      const ms = options.timeoutMs;
      const t = setTimeout(
        () =>
          this.#controller.abort(new TimeoutError('TIMEOUT', `${what}: timed out after ${ms} ms`)),
        ms,
      );
      this.#cleanup.push(() => clearTimeout(t));
    }
  }

  /** Also abort when `signal` does. */
  link(signal: AbortSignal): void {
    this.#cleanup.push(linkAbort(signal, this.#controller));
  }

  abort(reason: unknown): void {
    this.#controller.abort(reason);
  }

  dispose(): void {
    for (const f of this.#cleanup.splice(0)) f();
  }
}

/**
 * Resolves once the session is valid (now or after recovering from jeopardy); rejects when it
 * expires first or `signal` aborts.
 */
export function untilValid(session: Session, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (session.valid()) {
      resolve();
      return;
    }
    if (session.phase === 'expired') {
      reject(new SessionExpiredError('SESSION_EXPIRED', 'session expired'));
      return;
    }
    const done = (): void => {
      session.off('active', onActive);
      session.off('expired', onExpired);
      signal.removeEventListener('abort', onAbort);
    };
    const onActive = (): void => {
      done();
      resolve();
    };
    const onExpired = (): void => {
      done();
      reject(new SessionExpiredError('SESSION_EXPIRED', 'session expired'));
    };
    const onAbort = (): void => {
      done();
      reject(signal.reason as Error);
    };
    session.on('active', onActive);
    session.on('expired', onExpired);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** An AbortSignal that aborts when the session expires (not on jeopardy, which may recover). */
export function expirySignal(session: Session): { signal: AbortSignal; dispose(): void } {
  const c = new AbortController();
  const on = (): void =>
    c.abort(new SessionExpiredError('SESSION_EXPIRED', 'session expired while waiting'));
  if (session.phase === 'expired') on();
  else session.once('expired', on);
  return { signal: c.signal, dispose: () => session.off('expired', on) };
}

/**
 * Process-wide guard: one queue entry per (lease, name) at a time in this process. Keyed by the
 * lease, not the Session object: two sessions on one lease would share one key (etcd's layout)
 * and both believe they hold it.
 */
const queued = new Map<bigint, Set<string>>();

export function register(session: Session, name: string): void {
  let names = queued.get(session.leaseId);
  if (names === undefined) queued.set(session.leaseId, (names = new Set()));
  if (names.has(name)) {
    throw new RecipeError(
      'ALREADY_QUEUED',
      `session ${session.leaseId.toString(16)} already queues for or holds "${name}": ` +
        'one session has one key per name (etcd layout), so use another session',
    );
  }
  names.add(name);
}

export function unregister(session: Session, name: string): void {
  const names = queued.get(session.leaseId);
  names?.delete(name);
  if (names?.size === 0) queued.delete(session.leaseId);
}
