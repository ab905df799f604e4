// Session: a lease kept alive, with Chubby-style jeopardy (Burrows 2006 §2.8).
// The state logic and its safety argument are in session-state.ts; this file is the I/O driver:
// it sends renewals, feeds their send and answer times to the state machine, keeps a timer for
// the machine's next deadline, and turns transitions into events and AbortSignals.
//
// Cadence: a renewal is sent TTL/3 after each answer (etcd's Go client, client/v3/lease.go
// recvKeepAlive), each bounded by that same interval; after a failed renewal the next is tried
// after `retryIntervalMs`. Renewals go through `keepAliveOnce`, a short stream per renewal (Go's
// KeepAliveOnce), so each one is dated by the moment it was sent and a stale answer can never be
// credited to a later send.
//
// Queries (`valid()`, `remainingMs()`, `phase`) first apply the clock's current time, so a process
// resumed after SIGSTOP sees the loss at once, before any timer fires.
//
// Signals: `session.signal` aborts at the first jeopardy (or expiry) and is never reset — work that
// must not continue across a lapse binds to it. `activeSignal()` returns a signal for the current
// active period only (a fresh one after recovery); called when not active, it is already aborted.
import { EventEmitter } from 'node:events';
import type { CallOptions } from './call-options.js';
import { systemClock, type Cancel, type Clock } from './clock.js';
import {
  LeaseNotFoundError,
  SessionExpiredError,
  SessionJeopardyError,
  TimeoutError,
  type EtcdError,
} from './errors.js';
import {
  sessionTiming,
  SessionState,
  type SessionPhase,
  type SessionTiming,
  type SessionTimingOptions,
  type SessionTransition,
} from './session-state.js';
import './dispose.js';

/** What a session needs of the Lease API; `client.lease` provides it, tests may wrap it. */
export interface SessionTransport {
  grant(ttlSeconds: number, options: CallOptions): Promise<{ id: bigint; ttlSeconds: number }>;
  /** Throws LeaseNotFoundError when the server answers TTL ≤ 0. */
  keepAliveOnce(id: bigint, options: CallOptions): Promise<{ ttlSeconds: number }>;
  revoke(id: bigint, options: CallOptions): Promise<unknown>;
}

export interface SessionOptions extends SessionTimingOptions {
  /**
   * Lease TTL in seconds; default 60 (etcd's Go Session default, client/v3/concurrency/session.go).
   * The server may raise it to its minimum (2 s on etcd with default timing); the granted TTL is
   * used.
   */
  readonly ttlSeconds?: number;
  /** Reuse this existing lease instead of granting one (Go's WithLease); it is renewed at once. */
  readonly leaseId?: bigint;
  /** Pause after a failed renewal, in ms. Default min(1 000, TTL/3). */
  readonly retryIntervalMs?: number;
  /** The monotonic clock (tests inject a ManualClock). Default performance.now(). */
  readonly clock?: Clock;
  /** The lease API used (tests wrap it to block or fail renewals). Default client.lease. */
  readonly transport?: SessionTransport;
  /** Aborts the creation (grant) only; close the session to end it. */
  readonly signal?: AbortSignal;
  /** Bound on the creation (grant), in ms; default the client's defaultTimeoutMs. */
  readonly timeoutMs?: number;
}

export interface SessionEvents {
  /** Every transition. */
  change: [SessionTransition];
  /** active → jeopardy: stop acting on the lease now. */
  jeopardy: [SessionTransition];
  /** jeopardy → active: the server confirmed the lease within the grace period (Chubby's "safe"). */
  active: [SessionTransition];
  /** → expired (terminal): lease lost, grace period over, or closed. */
  expired: [SessionTransition];
}

// Named limits and defaults.
const ttlSecondsDefault = 60;
const retryIntervalMsMax = 1_000;
/** Bound on the revoke in close(), in ms, unless the caller gives timeoutMs. */
const closeTimeoutMsDefault = 5_000;

export class Session extends EventEmitter<SessionEvents> implements AsyncDisposable {
  readonly leaseId: bigint;
  readonly #transport: SessionTransport;
  readonly #clock: Clock;
  readonly #state: SessionState;
  readonly #retryIntervalMs: number;
  readonly #lapsed = new AbortController();
  #active = new AbortController();
  readonly #stop = new AbortController();
  #timer: Cancel | undefined;
  #renewTimer: Cancel | undefined;
  #seq = 0;
  #closing: Promise<void> | undefined;
  #abandoned = false;
  readonly #expired: Promise<SessionTransition>;
  #onExpired!: (t: SessionTransition) => void;

  private constructor(
    transport: SessionTransport,
    clock: Clock,
    leaseId: bigint,
    state: SessionState,
    retryIntervalMs: number,
  ) {
    super();
    this.leaseId = leaseId;
    this.#transport = transport;
    this.#clock = clock;
    this.#state = state;
    this.#retryIntervalMs = retryIntervalMs;
    this.#expired = new Promise((resolve) => (this.#onExpired = resolve));
    // Listeners cannot be attached yet; initial transitions only set the signals.
    this.#apply(state.initialTransitions);
    this.#scheduleRenewal(this.#renewIntervalMs());
  }

  /** Grant (or reuse) the lease and start keeping it alive. Use `client.session()`. */
  static async create(
    transport: SessionTransport,
    options: SessionOptions,
    defaultTimeoutMs: number,
  ): Promise<Session> {
    const clock = options.clock ?? systemClock;
    const call: CallOptions = {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      timeoutMs: options.timeoutMs ?? defaultTimeoutMs,
    };
    const sentAtMs = clock.nowMs();
    let leaseId: bigint;
    let ttlSeconds: number;
    if (options.leaseId !== undefined) {
      leaseId = options.leaseId;
      ttlSeconds = (await transport.keepAliveOnce(leaseId, call)).ttlSeconds;
    } else {
      const requested = options.ttlSeconds ?? ttlSecondsDefault;
      if (!(requested > 0)) throw new RangeError('session: ttlSeconds must be > 0');
      const g = await transport.grant(requested, call);
      leaseId = g.id;
      ttlSeconds = g.ttlSeconds;
    }
    const timing = sessionTiming(ttlSeconds, options);
    const state = new SessionState(timing, { sentAtMs, ttlSeconds, atMs: clock.nowMs() });
    const retryIntervalMs =
      options.retryIntervalMs ?? Math.min(retryIntervalMsMax, (ttlSeconds * 1000) / 3);
    return new Session(transport, clock, leaseId, state, retryIntervalMs);
  }

  /** The phase now (the clock is applied first). */
  get phase(): SessionPhase {
    this.#tick();
    return this.#state.phase;
  }

  /** The granted TTL of the latest answered renewal, in seconds. */
  get ttlSeconds(): number {
    return this.#state.ttlMs / 1000;
  }

  /** The timing in force (defaults resolved). */
  get timing(): SessionTiming {
    return this.#state.timing;
  }

  /**
   * True only while the session is active, which implies that the server still holds the lease
   * (session-state.ts). Computed from the clock at the moment of the call.
   */
  valid(): boolean {
    this.#tick();
    return !this.#abandoned && this.#state.validAt(this.#clock.nowMs());
  }

  /** Milliseconds of certain lease left (to the local deadline) while valid; 0 otherwise. */
  remainingMs(): number {
    this.#tick();
    return this.#abandoned ? 0 : this.#state.remainingMsAt(this.#clock.nowMs());
  }

  /** Throws SessionJeopardyError / SessionExpiredError unless valid with ≥ minRemainingMs left. */
  assertValid(minRemainingMs = 0): void {
    const remaining = this.remainingMs();
    if (remaining > minRemainingMs) return;
    if (this.#abandoned && this.#state.phase !== 'expired') throw this.#abandonedError();
    if (this.#state.phase === 'expired') {
      throw new SessionExpiredError(
        'SESSION_EXPIRED',
        `session ${this.leaseId.toString(16)} expired (${this.#state.expiredReason})`,
      );
    }
    throw new SessionJeopardyError(
      'SESSION_JEOPARDY',
      `session ${this.leaseId.toString(16)}: ${remaining} ms of lease left, ${minRemainingMs} needed`,
    );
  }

  /** Aborted at the first jeopardy or expiry; never reset. */
  get signal(): AbortSignal {
    this.#tick();
    return this.#lapsed.signal;
  }

  /** A signal for the current active period (already aborted when not active). */
  activeSignal(): AbortSignal {
    this.#tick();
    // A renewal answered after abandon() may bring the state back to active: not this session.
    if (this.#abandoned) this.#active.abort(this.#abandonedError());
    return this.#active.signal;
  }

  /** Resolves with the transition into `expired` (terminal). */
  closed(): Promise<SessionTransition> {
    return this.#expired;
  }

  /**
   * Stop renewing and revoke the lease (deleting its keys; an abandoned session's lease is left
   * to expire instead), bounded by `timeoutMs` (default 5 000 ms). A lease already gone is not an error; other revoke failures are thrown after the
   * session has ended locally (the lease then expires after its TTL).
   */
  close(options: CallOptions = {}): Promise<void> {
    this.#closing ??= this.#close(options);
    return this.#closing;
  }

  async #close(options: CallOptions): Promise<void> {
    const wasExpired = this.#state.phase === 'expired';
    this.#apply(this.#state.step({ type: 'close', atMs: this.#clock.nowMs() }));
    this.#halt();
    if (wasExpired && this.#state.expiredReason === 'lease-lost') return;
    // An abandoned session's hold may still be in use by stuck work: let the lease run out.
    if (this.#abandoned) return;
    try {
      await this.#transport.revoke(this.leaseId, {
        ...options,
        timeoutMs: options.timeoutMs ?? closeTimeoutMsDefault,
      });
    } catch (e) {
      if (!(e instanceof LeaseNotFoundError)) throw e;
    }
  }

  /**
   * Stop renewing at once, without revoking: the session then goes to jeopardy and expiry on its
   * own timeline (its timers keep running), and the server lets the lease run out after its TTL.
   * For a holder that must lose its hold but may still be acting on it (a STUCK callback,
   * progress-watchdog.ts): a revoke would hand the hold over while the work may still run, an
   * expiry does so no earlier than the lease's TTL after the last renewal, as for a dead holder.
   * A renewal already in flight may still be answered (and credited: the server did renew).
   * From the call on, the session is no longer valid here (valid() false, its signals aborted,
   * assertValid throws SessionJeopardyError): nothing new may be taken on it. close() then ends
   * it locally WITHOUT revoking, for the same reason. Idempotent.
   */
  abandon(): void {
    if (this.#abandoned) return;
    this.#abandoned = true;
    this.#renewTimer?.();
    this.#renewTimer = undefined;
    const why = this.#abandonedError();
    this.#lapsed.abort(why);
    this.#active.abort(why);
  }

  #abandonedError(): SessionJeopardyError {
    return new SessionJeopardyError(
      'SESSION_JEOPARDY',
      `session ${this.leaseId.toString(16)} was abandoned: no longer renewed, left to expire`,
    );
  }

  /** True once abandon() was called. */
  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** The monotonic clock this session measures its lease with. */
  get clock(): Clock {
    return this.#clock;
  }

  /** `await using` support: close, without throwing when the revoke fails. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close().catch(() => undefined);
  }

  #halt(): void {
    this.#stop.abort(new SessionExpiredError('SESSION_EXPIRED', 'session ended'));
    this.#timer?.();
    this.#renewTimer?.();
    this.#timer = undefined;
    this.#renewTimer = undefined;
  }

  #renewIntervalMs(): number {
    return this.#state.ttlMs / 3;
  }

  #tick(): void {
    if (this.#state.phase === 'expired') return;
    this.#apply(this.#state.step({ type: 'tick', atMs: this.#clock.nowMs() }));
  }

  #scheduleRenewal(delayMs: number): void {
    if (this.#stop.signal.aborted || this.#abandoned) return;
    this.#renewTimer?.();
    this.#renewTimer = this.#clock.after(delayMs, () => void this.#renew());
  }

  async #renew(): Promise<void> {
    if (this.#stop.signal.aborted || this.#abandoned) return;
    const seq = this.#seq++;
    const intervalMs = this.#renewIntervalMs();
    this.#apply(this.#state.step({ type: 'sent', seq, atMs: this.#clock.nowMs() }));
    // Bound the renewal on the session's own clock too, so that a transport that ignores
    // timeoutMs cannot hold the next renewal back.
    const attempt = new AbortController();
    const onStop = (): void => attempt.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    const cancelTimer = this.#clock.after(intervalMs, () =>
      attempt.abort(new TimeoutError('TIMEOUT', 'session: renewal not answered in time')),
    );
    try {
      const a = await this.#transport
        .keepAliveOnce(this.leaseId, { signal: attempt.signal, timeoutMs: Math.max(1, intervalMs) })
        .finally(() => {
          cancelTimer();
          this.#stop.signal.removeEventListener('abort', onStop);
        });
      this.#apply(
        this.#state.step({
          type: 'answered',
          seq,
          atMs: this.#clock.nowMs(),
          ttlSeconds: a.ttlSeconds,
        }),
      );
      this.#scheduleRenewal(this.#renewIntervalMs());
    } catch (e) {
      if (this.#stop.signal.aborted) return;
      const lost = e instanceof LeaseNotFoundError;
      const input = lost
        ? ({ type: 'answered', seq, atMs: this.#clock.nowMs(), ttlSeconds: 0 } as const)
        : ({ type: 'failed', seq, atMs: this.#clock.nowMs() } as const);
      this.#apply(this.#state.step(input));
      this.#lastError = e as EtcdError;
      this.#scheduleRenewal(this.#retryIntervalMs);
    }
  }

  /** The last renewal failure (for diagnostics). */
  #lastError: EtcdError | undefined;
  get lastRenewalError(): EtcdError | undefined {
    return this.#lastError;
  }

  #apply(transitions: readonly SessionTransition[]): void {
    for (const t of transitions) {
      if (t.to !== 'active') {
        const reason =
          t.to === 'expired'
            ? new SessionExpiredError('SESSION_EXPIRED', `session expired: ${t.reason}`)
            : new SessionJeopardyError('SESSION_JEOPARDY', `session in jeopardy: ${t.reason}`);
        this.#lapsed.abort(reason);
        this.#active.abort(reason);
      } else {
        this.#active = new AbortController();
      }
      if (t.to === 'expired') {
        this.#halt();
        this.#onExpired(t);
      }
      this.emit('change', t);
      if (t.to === 'jeopardy') this.emit('jeopardy', t);
      else if (t.to === 'active') this.emit('active', t);
      else this.emit('expired', t);
    }
    this.#armTimer();
  }

  /** A timer for the machine's next deadline, so events fire even when nobody asks. */
  #armTimer(): void {
    this.#timer?.();
    this.#timer = undefined;
    const at = this.#state.nextTimerAtMs;
    if (at === undefined || this.#stop.signal.aborted) return;
    this.#timer = this.#clock.after(at - this.#clock.nowMs(), () => this.#tick());
  }
}

export { sessionTiming };
