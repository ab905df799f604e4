// The lease contract, checked on a recorded history: a lease the server acknowledged must not be
// gone before the time the acknowledgement promised. A client that sent a grant or keepalive at s
// and got back TTL t knows the server reset the lease's countdown at some point after s (it had
// not seen the request before), so the lease lives at least t seconds from s as the server's clock
// measures them. Clocks run at slightly different rates (etcd's lessor counts TTLs on the
// leader's clock, server/lease/lessor.go); with every clock's rate within a factor 1 ± d of true
// time, t seconds of a fast clock last at least t / (1 + d) true seconds. So the promise is
// s + t·1000/(1 + d) ms, on the history's one monotonic clock, and a loss known to have happened
// before it is a violation, unless some client's revoke of the lease was sent by then (then the
// loss may be the revoke's doing). Gray & Cheriton (1989) state the lease rule; Kleppmann ("How to
// do distributed locking", 2016) shows what a client that trusts an early-expired lease breaks.

import { assert } from '../core/base/index.js';

/** A grant or keepalive the client got an answer to. Times are on the history's one monotonic clock. */
export interface LeaseRenewal {
  /** The lease ID, decimal. */
  readonly lease: string;
  readonly client: number;
  /** When the client sent the grant or keepalive. */
  readonly sentMs: number;
  /** When the answer arrived (≥ sentMs). */
  readonly answeredMs: number;
  /** The TTL in the answer; ≤ 0 means "lease gone", which promises nothing. */
  readonly ttlSeconds: number;
}

/** Evidence that the lease (and so its attached keys) was gone no later than atMs. */
export interface LeaseLoss {
  readonly lease: string;
  /** An upper bound on when the loss happened. */
  readonly atMs: number;
  /** E.g. 'revoke applied at revision 52', 'read at 1200 saw key a absent'. */
  readonly evidence: string;
}

/** A client's own LeaseRevoke: a loss at or after sentMs may be this revoke's doing. */
export interface LeaseRevocation {
  readonly lease: string;
  readonly client: number;
  readonly sentMs: number;
}

export interface LeaseHistory {
  readonly renewals: readonly LeaseRenewal[];
  readonly losses: readonly LeaseLoss[];
  readonly revocations: readonly LeaseRevocation[];
}

export interface LeaseCheckOptions {
  /** Largest rate error of any clock against true time (documented bound). Default 0.005 (0.5 %). */
  readonly driftRatio?: number;
  /**
   * The bound for one renewal, where it differs by renewal (a harness that ran a member's clock
   * skewed for a while judges the promises made then with that skew); `driftRatio` otherwise.
   */
  readonly driftRatioFor?: (renewal: LeaseRenewal) => number;
}

/** A fixed bound, or one per renewal. */
export type DriftRatioOf = number | ((renewal: LeaseRenewal) => number);

/** One loss that came before a promise. */
export interface LeaseViolation {
  readonly lease: string;
  /** The renewal whose promise the loss broke: the latest promise among those sent by the loss. */
  readonly renewal: LeaseRenewal;
  readonly loss: LeaseLoss;
  readonly promisedUntilMs: number;
  /** How long before the promise the loss was known to have happened. */
  readonly earlyByMs: number;
  /** The whole violation in one line: lease, renewal, loss, times. */
  readonly message: string;
}

export interface LeaseCheckResult {
  readonly ok: boolean;
  /** One per loss that broke a promise, in the order of the losses' times. */
  readonly violations: readonly LeaseViolation[];
  readonly renewalsChecked: number;
}

/**
 * The documented bound on clock-rate error. tenure's client session (client/session.ts) stops
 * trusting a lease 1 % of its TTL early, so a client that follows it never relies on more than
 * this checker holds the server to.
 */
export const DRIFT_RATIO_DEFAULT = 0.005;
const MS_PER_SECOND = 1000;

/**
 * Until when the lease is promised to live, on the history's clock: `sentMs + ttl·1000/(1 +
 * driftRatio)`. A TTL ≤ 0 ("lease gone") promises nothing: -∞.
 */
export function leasePromisedUntilMs(
  renewal: LeaseRenewal,
  driftRatio: number = DRIFT_RATIO_DEFAULT,
): number {
  assert(driftRatio >= 0 && Number.isFinite(driftRatio), () => `lease: drift ratio ${driftRatio}`);
  if (!(renewal.ttlSeconds > 0)) return -Infinity;
  return renewal.sentMs + (renewal.ttlSeconds * MS_PER_SECOND) / (1 + driftRatio);
}

export function checkLeaseContract(
  history: LeaseHistory,
  options: LeaseCheckOptions = {},
): LeaseCheckResult {
  const fixed = options.driftRatio ?? DRIFT_RATIO_DEFAULT;
  const driftRatio: DriftRatioOf = options.driftRatioFor ?? fixed;
  history.renewals.forEach(assertRenewal);
  const byLease = groupByLease(history);
  const violations: LeaseViolation[] = [];
  for (const [lease, records] of byLease) {
    if (records.losses.length === 0) continue;
    const promises = new LeasePromises(records.renewals, driftRatio);
    const revokedFromMs = records.revocations.reduce((t, r) => Math.min(t, r.sentMs), Infinity);
    for (const loss of records.losses) {
      // A revoke sent by the time of the loss may have caused it.
      if (revokedFromMs <= loss.atMs) continue;
      const broken = brokenBy(promises, loss.atMs);
      if (broken === undefined) continue;
      const d = typeof driftRatio === 'number' ? driftRatio : driftRatio(broken.renewal);
      violations.push(violation(lease, broken.renewal, broken.untilMs, loss, d));
    }
  }
  violations.sort((a, b) => a.loss.atMs - b.loss.atMs || compare(a.lease, b.lease));
  return { ok: violations.length === 0, violations, renewalsChecked: history.renewals.length };
}

function assertRenewal(r: LeaseRenewal): void {
  assert(
    Number.isFinite(r.sentMs) && r.answeredMs >= r.sentMs && Number.isFinite(r.ttlSeconds),
    () => `lease ${r.lease}: renewal sent at ${r.sentMs}, answered at ${r.answeredMs}`,
  );
}

interface LeaseRecords {
  readonly renewals: LeaseRenewal[];
  readonly losses: LeaseLoss[];
  readonly revocations: LeaseRevocation[];
}

function groupByLease(history: LeaseHistory): Map<string, LeaseRecords> {
  const byLease = new Map<string, LeaseRecords>();
  const of = (lease: string): LeaseRecords => {
    let records = byLease.get(lease);
    if (records === undefined) {
      records = { renewals: [], losses: [], revocations: [] };
      byLease.set(lease, records);
    }
    return records;
  };
  for (const r of history.renewals) of(r.lease).renewals.push(r);
  for (const l of history.losses) of(l.lease).losses.push(l);
  for (const r of history.revocations) of(r.lease).revocations.push(r);
  return byLease;
}

/** A renewal and the time it promised the lease until. */
export interface LeasePromise {
  readonly renewal: LeaseRenewal;
  readonly untilMs: number;
}

/**
 * One lease's promises by send time, with the latest promise among those sent up to each point:
 * the latest promise of the renewals sent by a given time in O(log n).
 */
export class LeasePromises {
  private readonly sentMs: number[];
  /** bestUpTo[i]: the latest promise among the first i + 1 renewals by send time. */
  private readonly bestUpTo: LeasePromise[];

  constructor(renewals: readonly LeaseRenewal[], driftRatio: DriftRatioOf) {
    const ratioOf = typeof driftRatio === 'number' ? () => driftRatio : driftRatio;
    const promises = renewals
      .map((renewal) => ({ renewal, untilMs: leasePromisedUntilMs(renewal, ratioOf(renewal)) }))
      .filter((p) => p.untilMs !== -Infinity)
      .sort((a, b) => a.renewal.sentMs - b.renewal.sentMs);
    this.sentMs = promises.map((p) => p.renewal.sentMs);
    this.bestUpTo = [];
    for (const p of promises) {
      const last = this.bestUpTo[this.bestUpTo.length - 1];
      this.bestUpTo.push(last !== undefined && last.untilMs >= p.untilMs ? last : p);
    }
  }

  /** The latest promise among renewals sent at or before `atMs` (before it, if `strictly`). */
  latestSentBy(atMs: number, strictly = false): LeasePromise | undefined {
    let lo = 0;
    let hi = this.sentMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const sent = this.sentMs[mid] as number;
      if (strictly ? sent < atMs : sent <= atMs) lo = mid + 1;
      else hi = mid;
    }
    return this.bestUpTo[lo - 1];
  }

  /** The latest promise of all. */
  latest(): LeasePromise | undefined {
    return this.bestUpTo[this.bestUpTo.length - 1];
  }
}

/**
 * The promise a loss at `atMs` broke, if any: first among renewals sent by the time of the loss
 * (an early expiry), then among all (a renewal acknowledged after the lease was already gone: a
 * resurrected lease, or an ID granted again, which tenure never does).
 */
function brokenBy(promises: LeasePromises, atMs: number): LeasePromise | undefined {
  const before = promises.latestSentBy(atMs);
  if (before !== undefined && atMs < before.untilMs) return before;
  const all = promises.latest();
  return all !== undefined && atMs < all.untilMs ? all : undefined;
}

function violation(
  lease: string,
  renewal: LeaseRenewal,
  promisedUntilMs: number,
  loss: LeaseLoss,
  driftRatio: number,
): LeaseViolation {
  const earlyByMs = promisedUntilMs - loss.atMs;
  const when =
    renewal.sentMs > loss.atMs ? ', a renewal sent after the loss (resurrected lease?)' : '';
  const message =
    `lease ${lease}: lost by ${ms(loss.atMs)} (${loss.evidence}), ${ms(earlyByMs)} early: ` +
    `the renewal client ${renewal.client} sent at ${ms(renewal.sentMs)} (answered at ` +
    `${ms(renewal.answeredMs)}, TTL ${renewal.ttlSeconds} s${when}) promised it until ` +
    `${ms(promisedUntilMs)} at a drift bound of ${driftRatio * 100} %`;
  return { lease, renewal, loss, promisedUntilMs, earlyByMs, message };
}

/** A time for a message: milliseconds with at most three decimals. */
export function ms(t: number): string {
  return `${Number.isInteger(t) ? t : Number(t.toFixed(3))} ms`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
