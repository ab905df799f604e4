// The session's state as a pure, deterministic state machine: inputs (a keepalive sent, answered
// or failed, a clock tick, close) at a given monotonic time in, transitions out. No clock, timers
// or I/O here (in the manner of etcd-io/raft's Step/Tick); session.ts drives it.
//
// The model is Chubby's (Burrows, The Chubby lock service, OSDI 2006, §2.8):
//
//   active ──renewal overdue──▶ jeopardy ──grace period over──▶ expired (terminal)
//      ▲                           │
//      └──server confirms lease────┘        any ──lease gone (TTL ≤ 0) / close──▶ expired
//
// Safety. The server expires a lease no earlier than TTL after it *received* the last renewal it
// granted, and it received it after we *sent* it (docs/leases-and-time.md, "Lease renewals":
// expiry = now + TTL at the leader; a new leader only extends). So the lease certainly lives until
//
//     deadline = sentAt(latest answered renewal) + grantedTTL − driftMargin
//
// where the drift margin covers the difference in rate between our monotonic clock and the
// leader's, and timer granularity. Go's clientv3 measures from the *answer* (late by one round
// trip, which can be long); etcd3 npm waits 2×TTL. We never measure from an answer.
//
// Jeopardy. A session is `active` — and valid() — only before
//
//     jeopardyAt = sentAt(latest answered renewal) + min(renewDeadline, grantedTTL − driftMargin)
//
// renewDeadline defaults to 2/3 of the TTL (client-go's RenewDeadline 10 s of LeaseDuration 15 s):
// with renewals every TTL/3 one renewal may be lost without consequence, and when the next one is
// also late the session enters jeopardy while at least TTL/3 − driftMargin of certain lease
// remains — the time a holder gets to stop acting before anyone else can take over. So
// `active ⇒ now < jeopardyAt ≤ deadline`: valid() is never true after the server may have expired
// the lease. (Chubby enters jeopardy only when the conservative local lease runs out; we start
// earlier because locks and elections abort their work on jeopardy, and that work needs time.)
//
// Grace. In jeopardy the driver keeps renewing. The session returns to `active` only when the
// server confirms the lease: an answer with TTL > 0 to a renewal sent at s gives a new
// jeopardyAt = s + …; if that is still in the future the session is active again. If no such
// confirmation arrives before `deadline + gracePeriod` (Chubby's grace period, counted from the
// end of the local lease as in §2.8), the session is `expired`. An answer with TTL ≤ 0 (lease not
// found) expires it at once. Time always advances before an input is applied, so an answer that
// arrives after the grace period cannot revive the session.
//
// Every input carries its time; a time earlier than one already seen is treated as the latest
// (the clock is monotonic, but callers may sample it before a step that runs later).

import { NO_MUTANTS, type Mutants } from '../core/base/mutants.js';

export type SessionPhase = 'active' | 'jeopardy' | 'expired';

export type TransitionReason =
  /** No renewal answered in time: now ≥ jeopardyAt. */
  | 'renewal-overdue'
  /** The grace period ended without a server confirmation. */
  | 'grace-period-over'
  /** The server answered a renewal with TTL ≤ 0, or said the lease does not exist. */
  | 'lease-lost'
  /** A renewal answered with TTL > 0 within the grace period. */
  | 'confirmed'
  /** The session was closed by its owner. */
  | 'closed';

export interface SessionTransition {
  readonly from: SessionPhase;
  readonly to: SessionPhase;
  readonly atMs: number;
  readonly reason: TransitionReason;
}

export type SessionInput =
  /** A renewal (keepalive, or a TimeToLive query) was sent; `seq` identifies it. */
  | { readonly type: 'sent'; readonly seq: number; readonly atMs: number }
  /** The renewal `seq` was answered: the server holds the lease ttlSeconds from its receipt. */
  | {
      readonly type: 'answered';
      readonly seq: number;
      readonly atMs: number;
      readonly ttlSeconds: number;
    }
  /** The renewal `seq` failed or was abandoned; its answer will not be used. */
  | { readonly type: 'failed'; readonly seq: number; readonly atMs: number }
  | { readonly type: 'tick'; readonly atMs: number }
  | { readonly type: 'close'; readonly atMs: number };

export interface SessionTiming {
  /** Subtracted from every lease end (clock rate difference, timer granularity), in ms. */
  readonly driftMarginMs: number;
  /** A renewal must be answered this long after the basis renewal was sent, in ms. */
  readonly renewDeadlineMs: number;
  /** After the local deadline, how long to keep trying before `expired`, in ms. */
  readonly gracePeriodMs: number;
}

export interface SessionStart {
  /** When the grant (or the first renewal of a reused lease) was sent. */
  readonly sentAtMs: number;
  /** The TTL the server granted. */
  readonly ttlSeconds: number;
  /** Now. */
  readonly atMs: number;
}

/** The session options that set its timing (each has a default from the TTL). */
export interface SessionTimingOptions {
  /**
   * Subtracted from the lease end to cover clock-rate difference and timer granularity, in ms.
   * Default max(100, 1 % of the TTL) (node-redlock's drift factor 0.01). Larger is safer and
   * shortens the usable lease.
   */
  readonly driftMarginMs?: number;
  /**
   * Jeopardy begins when no renewal sent within this long after the last answered one's send has
   * been answered, in ms. Default 2/3 of the TTL (client-go's RenewDeadline/LeaseDuration); capped
   * at TTL − driftMarginMs. Smaller warns earlier but risks false alarms on a slow network.
   */
  readonly renewDeadlineMs?: number;
  /**
   * After the local lease end, how long to keep renewing before declaring the session expired,
   * in ms. Default: the TTL (Chubby uses 45 s for 12 s leases). 0 = expire at the local deadline.
   */
  readonly gracePeriodMs?: number;
}

// Named limits and defaults.
/** Renewals awaiting an answer that are remembered; older ones are forgotten (safe: unused). */
const pendingRenewalsMax = 64;
const driftMarginMsMin = 100;
const driftFraction = 0.01;
const renewDeadlineFraction = 2 / 3;

/** The timing for a granted TTL and the options, with defaults resolved and clamped. */
export function sessionTiming(ttlSeconds: number, o: SessionTimingOptions): SessionTiming {
  const ttlMs = ttlSeconds * 1000;
  const driftMarginMs =
    o.driftMarginMs ?? Math.max(driftMarginMsMin, Math.ceil(ttlMs * driftFraction));
  if (!(driftMarginMs >= 0 && driftMarginMs < ttlMs)) {
    throw new RangeError(`session: driftMarginMs must be in [0, TTL) (got ${driftMarginMs})`);
  }
  const renewDeadlineMs = Math.min(
    o.renewDeadlineMs ?? Math.floor(ttlMs * renewDeadlineFraction),
    ttlMs - driftMarginMs,
  );
  if (!(renewDeadlineMs > 0)) throw new RangeError('session: renewDeadlineMs must be > 0');
  const gracePeriodMs = o.gracePeriodMs ?? ttlMs;
  if (!(gracePeriodMs >= 0)) throw new RangeError('session: gracePeriodMs must be ≥ 0');
  return { driftMarginMs, renewDeadlineMs, gracePeriodMs };
}

export class SessionState {
  readonly timing: SessionTiming;
  #phase: SessionPhase = 'active';
  #nowMs: number;
  #basisSentAtMs: number;
  #ttlMs: number;
  /**
   * The latest send time of a renewal answered with TTL > 0. Jeopardy counts from it, while the
   * deadline counts from the basis (the answer that promises the latest end): an older renewal
   * answered late with a longer TTL may move the basis back in time, and jeopardy must not
   * follow it backwards (a session that is active would then already be overdue).
   */
  #latestAnsweredSentAtMs: number;
  #expiredReason: TransitionReason | undefined;
  readonly #pending = new Map<number, number>();

  constructor(
    timing: SessionTiming,
    start: SessionStart,
    /** Planted bugs for the simulator's mutation runs; never set in production. */
    private readonly mutants: Mutants = NO_MUTANTS,
  ) {
    if (!(start.ttlSeconds > 0)) throw new RangeError('SessionState: ttlSeconds must be > 0');
    if (!(timing.driftMarginMs >= 0 && timing.renewDeadlineMs > 0 && timing.gracePeriodMs >= 0)) {
      throw new RangeError('SessionState: bad timing');
    }
    this.timing = timing;
    this.#nowMs = Math.max(start.atMs, start.sentAtMs);
    this.#basisSentAtMs = start.sentAtMs;
    this.#latestAnsweredSentAtMs = start.sentAtMs;
    this.#ttlMs = start.ttlSeconds * 1000;
    // The start itself may already be late (a slow grant); apply the time.
    this.#initial = this.#advance(this.#nowMs);
  }

  /** Transitions that happened at construction (a grant answered too late). */
  readonly #initial: SessionTransition[];
  get initialTransitions(): readonly SessionTransition[] {
    return this.#initial;
  }

  get phase(): SessionPhase {
    return this.#phase;
  }

  get nowMs(): number {
    return this.#nowMs;
  }

  /** Why the session expired (undefined while not expired). */
  get expiredReason(): TransitionReason | undefined {
    return this.#expiredReason;
  }

  /** The TTL of the latest adopted answer, in ms. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** When the latest adopted (answered) renewal was sent. */
  get basisSentAtMs(): number {
    return this.#basisSentAtMs;
  }

  /** Until this time the server certainly holds the lease. */
  get deadlineMs(): number {
    return this.#basisSentAtMs + this.#ttlMs - this.timing.driftMarginMs;
  }

  /** Active ends here unless a renewal is answered first. */
  get jeopardyAtMs(): number {
    // Never later than the deadline, so active implies the server still holds the lease.
    return Math.min(this.#latestAnsweredSentAtMs + this.timing.renewDeadlineMs, this.deadlineMs);
  }

  /** Jeopardy ends in expiry here unless the server confirms the lease first. */
  get expireAtMs(): number {
    return this.deadlineMs + this.timing.gracePeriodMs;
  }

  /** The next time at which a tick would change the phase (undefined once expired). */
  get nextTimerAtMs(): number | undefined {
    if (this.#phase === 'active') return this.jeopardyAtMs;
    if (this.#phase === 'jeopardy') return this.expireAtMs;
    return undefined;
  }

  /** Renewals sent and not yet answered or failed. */
  get pendingRenewals(): number {
    return this.#pending.size;
  }

  /** Whether the session would be active at `atMs` (≥ now), without changing state. */
  validAt(atMs: number): boolean {
    return this.#phase === 'active' && Math.max(atMs, this.#nowMs) < this.jeopardyAtMs;
  }

  /** Milliseconds of certain lease left at `atMs` while valid; 0 otherwise. */
  remainingMsAt(atMs: number): number {
    return this.validAt(atMs) ? this.deadlineMs - Math.max(atMs, this.#nowMs) : 0;
  }

  /** Apply one input; returns the transitions it caused, in order. */
  step(input: SessionInput): SessionTransition[] {
    const t = Math.max(this.#nowMs, input.atMs);
    this.#nowMs = t;
    const out = this.#advance(t);
    if (this.#phase === 'expired') return out;
    switch (input.type) {
      case 'tick':
        break;
      case 'sent':
        this.#pending.set(input.seq, t);
        if (this.#pending.size > pendingRenewalsMax) {
          const oldest = this.#pending.keys().next().value;
          if (oldest !== undefined) this.#pending.delete(oldest);
        }
        break;
      case 'failed':
        this.#pending.delete(input.seq);
        break;
      case 'answered':
        this.#answered(input.seq, input.ttlSeconds, t, out);
        break;
      case 'close':
        out.push(this.#to('expired', t, 'closed'));
        break;
    }
    return out;
  }

  #answered(seq: number, ttlSeconds: number, t: number, out: SessionTransition[]): void {
    let sentAtMs = this.#pending.get(seq);
    if (sentAtMs === undefined) return; // unknown, failed or forgotten: cannot be dated, unused
    this.#pending.delete(seq);
    if (!(ttlSeconds > 0)) {
      out.push(this.#to('expired', t, 'lease-lost'));
      return;
    }
    const ttlMs = ttlSeconds * 1000;
    // The planted bug: date the lease from the answer, as if the server had renewed it then.
    if (this.mutants.has('sessionFromAnswer')) sentAtMs = t;
    this.#latestAnsweredSentAtMs = Math.max(this.#latestAnsweredSentAtMs, sentAtMs);
    // Adopt the answer if it promises a later end than the current basis (an older renewal
    // answered late, or a TimeToLive with a short remainder, may promise less: keep the best).
    if (sentAtMs + ttlMs > this.#basisSentAtMs + this.#ttlMs) {
      this.#basisSentAtMs = sentAtMs;
      this.#ttlMs = ttlMs;
    }
    if (this.#phase === 'jeopardy' && t < this.jeopardyAtMs) {
      out.push(this.#to('active', t, 'confirmed'));
    }
  }

  #advance(t: number): SessionTransition[] {
    const out: SessionTransition[] = [];
    if (this.#phase === 'active' && t >= this.jeopardyAtMs) {
      out.push(this.#to('jeopardy', this.jeopardyAtMs, 'renewal-overdue'));
    }
    if (this.#phase === 'jeopardy' && t >= this.expireAtMs) {
      out.push(this.#to('expired', this.expireAtMs, 'grace-period-over'));
    }
    return out;
  }

  #to(to: SessionPhase, atMs: number, reason: TransitionReason): SessionTransition {
    const from = this.#phase;
    this.#phase = to;
    if (to === 'expired') {
      this.#expiredReason = reason;
      this.#pending.clear();
    }
    return { from, to, atMs, reason };
  }
}
