// Mutual exclusion of a lock service, checked on a recorded history of holds. etcd's lock (the
// concurrency package's Mutex, and the v3lock service, server/etcdserver/api/v3lock) grants the
// lock to the waiter whose key has the lowest create revision, and that revision is the fencing
// token a holder passes to the storage it writes to (Kleppmann, "How to do distributed locking",
// 2016). Three properties follow, each checked separately:
// - tokens: the tokens of one lock are unique and follow real-time grant order: a hold granted
//   before another was even requested has the lower token, since its key was created earlier;
// - acknowledged leases: while a holder's lease is promised to live (lease-contract.ts) and it has
//   not released, no other hold of the lock may be granted, because the server only grants the
//   next waiter once the holder's key is gone, and the key lives as long as its lease;
// - effects: a holder acts only while it holds, so a lower token's effects all precede a higher
//   token's; an effect after the next holder started acting is a stale holder acting, which only
//   fencing at the storage can stop;
// - certainty: a holder acts only while its lease is certain, that is before the promise of some
//   renewal of its lease answered by then (what a holder can know: tenure's SDK session rule,
//   client/session-state.ts); an effect past every such promise relied on a lease the server was
//   free to end, whether or not another holder was there to notice.

import { assert } from '../core/base/index.js';
import {
  DRIFT_RATIO_DEFAULT,
  type LeaseCheckOptions,
  LeasePromises,
  leasePromisedUntilMs,
  type LeaseRenewal,
  ms,
} from './lease-contract.js';

export interface LockHold {
  /** The lock's name. */
  readonly lock: string;
  readonly client: number;
  /** The holder's lease ID, decimal (its renewals are in the LeaseRenewal list). */
  readonly lease: string;
  /** The fencing token: the lock key's create revision. */
  readonly token: number;
  /** When the Lock request was sent. */
  readonly requestedMs: number;
  /** When the grant reached the client. */
  readonly acquiredMs: number;
  /** When the holder stopped (sent Unlock, revoked, or stopped acting); Infinity if never. */
  readonly releasedMs: number;
  /** Times at which the holder acted as the holder (ascending). */
  readonly effects: readonly number[];
}

export type LockViolationKind =
  'duplicate-token' | 'token-order' | 'lease-overlap' | 'stale-effect' | 'uncertain-effect';

export interface LockViolation {
  readonly kind: LockViolationKind;
  readonly lock: string;
  /** The earlier hold (lower token, or granted first) and the later one. */
  readonly first: LockHold;
  readonly second: LockHold;
  /** The whole violation in one line: which lock, which holds, the times. */
  readonly message: string;
}

export interface LockCheckResult {
  readonly ok: boolean;
  readonly violations: readonly LockViolation[];
  readonly holdsChecked: number;
}

/** Effects quoted in a stale-effect message; the rest are counted. */
const QUOTED_EFFECTS_MAX = 3;

export function checkLockExclusion(
  holds: readonly LockHold[],
  renewals: readonly LeaseRenewal[],
  options: LeaseCheckOptions = {},
): LockCheckResult {
  const driftRatio = options.driftRatio ?? DRIFT_RATIO_DEFAULT;
  holds.forEach(assertHold);
  const promises = new Map<string, LeasePromises>();
  const byLease = groupBy(renewals, (r) => r.lease);
  for (const [lease, list] of byLease) promises.set(lease, new LeasePromises(list, driftRatio));
  const violations: LockViolation[] = [];
  for (const [lock, lockHolds] of groupBy(holds, (h) => h.lock)) {
    const byToken = [...lockHolds].sort((a, b) => a.token - b.token);
    violations.push(...duplicateTokens(lock, byToken));
    violations.push(...tokenOrder(lock, byToken));
    violations.push(...staleEffects(lock, byToken));
    violations.push(...leaseOverlaps(lock, lockHolds, promises));
    violations.push(...uncertainEffects(lock, lockHolds, byLease, driftRatio));
  }
  return { ok: violations.length === 0, violations, holdsChecked: holds.length };
}

function assertHold(h: LockHold): void {
  assert(
    Number.isFinite(h.requestedMs) && h.acquiredMs >= h.requestedMs && h.releasedMs >= h.acquiredMs,
    () =>
      `lock ${h.lock}: hold of client ${h.client} requested at ${h.requestedMs}, acquired at ` +
      `${h.acquiredMs}, released at ${h.releasedMs}`,
  );
}

/** Holds of one lock sorted by token: equal neighbours share a token. */
function duplicateTokens(lock: string, byToken: readonly LockHold[]): LockViolation[] {
  const out: LockViolation[] = [];
  for (let i = 1; i < byToken.length; i++) {
    const first = byToken[i - 1] as LockHold;
    const second = byToken[i] as LockHold;
    if (first.token !== second.token) continue;
    out.push({
      kind: 'duplicate-token',
      lock,
      first,
      second,
      message: `lock ${lock}: token ${first.token} granted twice, to ${describe(first)} and to ${describe(second)}`,
    });
  }
  return out;
}

/**
 * Real-time grant order: for each hold B, the hold with a higher token that was granted earliest;
 * if that grant came before B was requested, B should have had the higher token. One witness per
 * hold, found in one pass from the highest token down.
 */
function tokenOrder(lock: string, byToken: readonly LockHold[]): LockViolation[] {
  const out: LockViolation[] = [];
  let earliestAbove: LockHold | undefined;
  for (const group of sameTokenGroups(byToken).reverse()) {
    for (const b of group) {
      const a = earliestAbove;
      if (a === undefined || !(a.acquiredMs < b.requestedMs)) continue;
      out.push({
        kind: 'token-order',
        lock,
        first: a,
        second: b,
        message:
          `lock ${lock}: ${describe(a)} was granted at ${ms(a.acquiredMs)}, before ` +
          `${describe(b)} was requested at ${ms(b.requestedMs)}, yet has the higher token`,
      });
    }
    for (const b of group) {
      if (earliestAbove === undefined || b.acquiredMs < earliestAbove.acquiredMs) earliestAbove = b;
    }
  }
  return out.reverse();
}

/**
 * Effects in token order: for each hold B, the latest effect of any lower-token hold must not be
 * after B's first effect (equal times are concurrent, not after). One witness per hold: the
 * lower-token hold that acted latest.
 */
function staleEffects(lock: string, byToken: readonly LockHold[]): LockViolation[] {
  const out: LockViolation[] = [];
  let latest: { hold: LockHold; atMs: number } | undefined;
  for (const group of sameTokenGroups(byToken)) {
    for (const b of group) {
      const firstMs = b.effects.reduce((m, t) => Math.min(m, t), Infinity);
      if (latest === undefined || !(latest.atMs > firstMs)) continue;
      const a = latest.hold;
      const late = a.effects.filter((t) => t > firstMs);
      const quoted = late.slice(0, QUOTED_EFFECTS_MAX).map(ms).join(', ');
      const more =
        late.length > QUOTED_EFFECTS_MAX ? ` and ${late.length - QUOTED_EFFECTS_MAX} more` : '';
      out.push({
        kind: 'stale-effect',
        lock,
        first: a,
        second: b,
        message:
          `lock ${lock}: stale holder ${describe(a)} acted at ${quoted}${more}, after ` +
          `${describe(b)} first acted at ${ms(firstMs)}`,
      });
    }
    for (const a of group) {
      const lastMs = a.effects.reduce((m, t) => Math.max(m, t), -Infinity);
      if (latest === undefined || lastMs > latest.atMs) latest = { hold: a, atMs: lastMs };
    }
  }
  return out;
}

/**
 * Holds sorted by token, cut into runs of one token. Holds sharing a token are a duplicate-token
 * violation already, so the order checks compare across tokens only.
 */
function sameTokenGroups(byToken: readonly LockHold[]): LockHold[][] {
  const groups: LockHold[][] = [];
  for (const h of byToken) {
    const last = groups[groups.length - 1];
    if (last !== undefined && (last[0] as LockHold).token === h.token) last.push(h);
    else groups.push([h]);
  }
  return groups;
}

/**
 * Protected intervals, [acquiredMs, min(releasedMs, promisedUntil)), where promisedUntil is the
 * latest promise among the holder's lease renewals sent before it released: no hold with another
 * token may be acquired inside one. For two non-empty intervals that is the same as their
 * overlapping; a hold whose own renewals are missing (an empty interval) still counts when it is
 * granted inside another's. Swept in order of acquisition with the intervals still open, so the
 * work is proportional to the overlaps found.
 */
function leaseOverlaps(
  lock: string,
  holds: readonly LockHold[],
  promises: ReadonlyMap<string, LeasePromises>,
): LockViolation[] {
  const intervals = holds
    .map((hold) => ({ hold, endMs: protectedUntilMs(hold, promises.get(hold.lease)) }))
    // At one instant, protected holds first, so that a hold granted at the same instant as a
    // protected one is found inside it.
    .sort(
      (a, b) =>
        a.hold.acquiredMs - b.hold.acquiredMs ||
        Number(b.endMs > b.hold.acquiredMs) - Number(a.endMs > a.hold.acquiredMs),
    );
  const out: LockViolation[] = [];
  let open: typeof intervals = [];
  for (const next of intervals) {
    const b = next.hold;
    open = open.filter((i) => i.endMs > b.acquiredMs);
    for (const earlier of open) {
      const a = earlier.hold;
      if (a.token === b.token) continue;
      const released =
        a.releasedMs === Infinity ? 'never released' : `released at ${ms(a.releasedMs)}`;
      out.push({
        kind: 'lease-overlap',
        lock,
        first: a,
        second: b,
        message:
          `lock ${lock}: ${describe(b)} was granted at ${ms(b.acquiredMs)} while the ` +
          `acknowledged lease ${a.lease} of ${describe(a)} still ran (promised and held until ` +
          `${ms(earlier.endMs)}, ${released})`,
      });
    }
    if (next.endMs > b.acquiredMs) open.push(next);
  }
  return out;
}

/**
 * Effects past the certainty of the holder's lease: for each effect, the latest promise among the
 * renewals of the lease answered by then. One violation per hold, quoting its uncertain effects.
 */
function uncertainEffects(
  lock: string,
  holds: readonly LockHold[],
  byLease: ReadonlyMap<string, readonly LeaseRenewal[]>,
  driftRatio: number,
): LockViolation[] {
  const out: LockViolation[] = [];
  for (const h of holds) {
    const answered = (byLease.get(h.lease) ?? [])
      .map((r) => ({ answeredMs: r.answeredMs, untilMs: leasePromisedUntilMs(r, driftRatio) }))
      .sort((a, b) => a.answeredMs - b.answeredMs);
    const late: number[] = [];
    let certainMs = -Infinity;
    let next = 0;
    for (const t of [...h.effects].sort((a, b) => a - b)) {
      while (next < answered.length && (answered[next] as { answeredMs: number }).answeredMs <= t)
        certainMs = Math.max(certainMs, (answered[next++] as { untilMs: number }).untilMs);
      if (!(t < certainMs)) late.push(t);
    }
    if (late.length === 0) continue;
    const quoted = late.slice(0, QUOTED_EFFECTS_MAX).map(ms).join(', ');
    const more =
      late.length > QUOTED_EFFECTS_MAX ? ` and ${late.length - QUOTED_EFFECTS_MAX} more` : '';
    out.push({
      kind: 'uncertain-effect',
      lock,
      first: h,
      second: h,
      message:
        `lock ${lock}: ${describe(h)} acted at ${quoted}${more}, when no renewal of lease ` +
        `${h.lease} answered by then promised it any longer`,
    });
  }
  return out;
}

/** The end of a hold's protected interval: its release, or its lease's promise if earlier. */
function protectedUntilMs(hold: LockHold, promises: LeasePromises | undefined): number {
  const promisedMs = promises?.latestSentBy(hold.releasedMs, true)?.untilMs ?? -Infinity;
  return Math.min(hold.releasedMs, promisedMs);
}

/** A hold in a message: who, which token, acquired when. */
function describe(h: LockHold): string {
  return `client ${h.client} (token ${h.token}, lease ${h.lease}, acquired at ${ms(h.acquiredMs)})`;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}
