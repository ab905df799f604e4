// The leader's lease clock. Lease deadlines exist only on the leader's monotonic clock: the leader
// stamps lease commands with it, refreshes every lease when it takes over (it cannot know how long
// the old leader had already waited), renews leases on keepalives, answers TTL queries, and
// proposes a revoke for every lease its clock says has expired. A follower forwards all of these to
// the leader.
//
// Why a renewal the leader answers is kept (the bound the lease contract rests on). A client sends
// a renewal at s; it reaches the leader L at a ≥ s. L answers it only after a quorum acknowledged
// a heartbeat round that L sent at h ≥ a (member.ts, confirmLeadership; the same rounds ReadIndex
// uses, Raft thesis §6.4), and records the deadline a + TTL on its own clock. Any later leader L'
// is elected at E > h: its quorum intersects the one that answered round h in L's term. L' first
// commits a refresh at R ≥ E that moves every deadline to R + TTL on its clock, and expires
// nothing before; L itself expires nothing before a + TTL while it leads. So on the
// server the lease lives until real time ≥ s + TTL/(1 + ρ), where ρ (CLOCK_RATE_ERROR_MAX, 0.5 %)
// bounds how fast a member's clock may run. No clock rate matters for the order a < h < E: that is
// a quorum intersection, which is why a stopped or starved leader cannot break it — it can only
// fail to confirm. The client (the SDK's session-state.ts) keeps the lease for s + TTL −
// driftMargin on its own clock, which is within the bound for ρ ≤ 0.5 % (its margin is 1 % of the
// TTL, at least 100 ms). etcd's refresh adds an election timeout (lessor Promote, extend =
// electionTicks): etcd's leader renews without confirming its leadership, so a deposed leader
// may still renew until CheckQuorum steps it down. Renewals here are confirmed first, so the
// refresh adds nothing (extraMs 0): a lock whose holder died during a failover passes an election
// timeout sooner (issue 19, lock-failover).
// Nor does the argument assume that a new leader waits an election timeout after the old one
// last heard its quorum: an early election on evidence that the leader's process is gone (issue
// 19, raft.ts leaderUnreachable) can elect L' well inside that time, or even while a wrongly
// suspected L still runs, and L's confirmations still precede E because the voters that elect L'
// stop answering L's rounds once they vote in the later term.
//
// Checkpoints (etcd's LeaseCheckpoint, server/lease/lessor.go: Checkpoint,
// checkpointScheduledLeases; Promote continues from the remainder). Without them a lock whose
// holder died shortly before a leader change passes only after TTL + failover + TTL. So the
// leader commits, for each lease its clock says has missed a renewal, the remainder r it holds
// at c: a leaseCheckpoint entry. A new leader's refresh then gives that lease R + r × (1 + 2ρ)
// instead of R + TTL, and never more. That keeps the bound: the checkpoint says the
// deadline L held at c, and R > c (R ≥ E, after the entry committed), so with clocks within ρ of
// true time r × (1 + 2ρ) on L''s clock lasts at least as long as r did on L's. L's deadline can
// only have moved later by a renewal answered after c; every such renewal commits a reset
// (remaining null) before it is answered, when a checkpoint of its lease is committed or still
// in flight (the fix of etcd-io/etcd#13491, #13508) — and a committed reset is in L''s log
// before its refresh (Leader Completeness, Raft §5.4), so L' grants that lease the full TTL. A
// checkpoint taken after the renewal counts it (it reads `renewals`). Healthy keepalives cost
// nothing: a lease is checkpointed only below LEASE_CHECKPOINT_TTL_FRACTION, which a client
// renewing every TTL/3 never reaches, so a renewal finds no checkpoint to reset. The fraction sits
// just under two thirds so that a lease whose holder died is checkpointed soon after its first
// missed renewal: the earlier the checkpoint, the more of the leader changes that follow a
// holder's death continue its lease instead of granting a fresh TTL.
import type { Mutants } from '../../core/base/mutants.js';
import type { Term } from '../../core/base/units.js';
import type { LeaseId, LeaseKeepAliveResponse } from '../../core/state/kv-types.js';
import type { LeaseTimeToLiveResponse } from '../../core/state/kv-types.js';
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { Clock } from '../io.js';
import type { Replica } from '../replica.js';
import { encodeEtcdEntry, type ServerResult } from './server-machine.js';

/** The leader checks lease deadlines this often (etcd: 500 ms). */
export const LEASE_EXPIRY_CHECK_MS = 500;
/**
 * A deadline due before the next periodic check gets a check of its own, at the deadline but not
 * sooner than this after the last: a lease expires within this of its deadline rather than
 * within LEASE_EXPIRY_CHECK_MS (a lock whose holder died passes a quarter second sooner on
 * average), and a crowd of deadlines costs at most one check per this interval. Each check
 * scans every lease, so this also bounds that cost: 20 scans a second at most.
 */
export const LEASE_EXPIRY_CHECK_MIN_MS = 50;
/** Revokes proposed per check at most (etcd rate-limits to 1000/s). */
export const LEASE_REVOKES_PER_CHECK_MAX = 500;

/**
 * A lease is `expiring` once less than this fraction of its TTL remains by the leader's clock:
 * etcd's client renews every TTL/3 (client/v3/lease.go, nextKeepAlive), so a lease kept alive
 * never falls below two thirds; one below a third has missed two renewals in a row.
 */
export const LEASE_EXPIRING_TTL_FRACTION = 1 / 3;

/**
 * A lease is checkpointed while less than this fraction of its TTL remains by the leader's clock:
 * it has missed a renewal. Not 2/3, where a client renewing every TTL/3 is just before each
 * renewal: the renewal's travel and its confirmation round take it a little lower. 0.6 leaves a
 * fifteenth of the TTL for them (333 ms of a 5 s TTL) and catches a missed renewal that soon.
 */
export const LEASE_CHECKPOINT_TTL_FRACTION = 0.6;
/**
 * What a new leader's refresh adds to each lease's full TTL: nothing, as renewals are confirmed
 * before they are answered (the header above). The field stays in the entry (etcd's Promote adds
 * an election timeout; an older leader of ours did too), and every member applies what it says.
 */
export const REFRESH_EXTRA_MS = 0;
/** Leases in one checkpoint entry at most, the most urgent first (etcd: 1000 per batch). */
export const LEASE_CHECKPOINTS_PER_ENTRY_MAX = 1000;

/**
 * The leases by state. Only a leader whose lease clock is in force can tell: elsewhere (a
 * follower, a leader before its refresh) deadlines are another process's clock readings, and
 * every lease is `unknown`.
 */
export interface LeaseCensus {
  readonly active: number;
  readonly expiring: number;
  /** Past its deadline, its revoke proposed or about to be. */
  readonly expired: number;
  readonly unknown: number;
}

export interface LeaseClockDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly machine: EtcdMachine;
  readonly clock: Clock;
  /** The log record format to write entries in (log-record.ts). */
  readonly logFormat: () => number;
  /**
   * Propose a revoke on this member, as leader of `term`, and nowhere else: the decision compares
   * a reading of this member's clock with deadlines on this member's clock, so it means nothing to
   * another leader (forwarded, it would compare one member's clock with another's). Resolves
   * when its fate is known; a member that no longer leads in `term` proposes nothing.
   */
  readonly proposeRevoke: (id: LeaseId, ifExpiredAtMs: number, term: Term) => Promise<void>;
  readonly warn: (obj: object, msg: string) => void;
  readonly mutants: Mutants;
  /**
   * Whether this leader checkpoints leases that missed a renewal (on by default; off with
   * --lease-checkpoint=false). Off, it still resets a checkpoint another leader committed.
   */
  readonly checkpoint: boolean;
}

export class LeaseClock {
  /** The term whose leader has refreshed every lease: only then may it expire leases. */
  private readyTerm: Term | 0 = 0;
  private refreshingTerm: Term | 0 = 0;
  /**
   * Renewals this leader granted in its current term, as deadlines on its clock. Renewals are
   * not written to the log (etcd's lessor does the same): a new leader refreshes every lease to a
   * full TTL from its own takeover, or to its checkpointed remainder.
   */
  private readonly renewals = new Map<LeaseId, number>();
  private readonly revoking = new Set<LeaseId>();
  /** Renewals that arrived and wait for leadership to be confirmed: not expired meanwhile. */
  private readonly confirming = new Map<LeaseId, number>();
  /**
   * Leases in checkpoint entries this leader proposed in `term` and has not seen applied: a
   * renewal of one must reset it, for the entry may still commit. One whose fate was not learnt
   * (dropped, the term ending) stays until the term changes.
   */
  private pendingCheckpoints: { term: Term | 0; ids: Map<LeaseId, number> } = {
    term: 0,
    ids: new Map(),
  };
  private stopped = false;
  /** The one-shot check armed for a deadline before the next periodic one, if any. */
  private cancelEarlyCheck: (() => void) | undefined;

  constructor(private readonly deps: LeaseClockDeps) {}

  private get raft(): Replica<ServerResult>['raft'] {
    return this.deps.replica().raft;
  }

  stop(): void {
    this.stopped = true;
    this.cancelEarlyCheck?.();
    this.cancelEarlyCheck = undefined;
  }

  /** True once this leader's refresh applied in its current term. */
  get ready(): boolean {
    const raft = this.raft;
    // The planted bug: a new leader trusts the deadlines another leader's clock set.
    if (this.deps.mutants.has('leaseNoRefresh')) return raft.role === 'leader';
    return raft.role === 'leader' && this.readyTerm === raft.term;
  }

  /**
   * A new leader gives every lease a fresh TTL on its own clock before it may expire, renew,
   * grant or report any; until that is applied, lease deadlines in the state are another
   * process's clock readings. Retried until it lands in this term.
   */
  ensureRefresh(): void {
    const raft = this.raft;
    if (this.deps.mutants.has('leaseNoRefresh')) return;
    if (raft.role !== 'leader' || this.readyTerm === raft.term) return;
    if (this.refreshingTerm === raft.term) return;
    const t = raft.term;
    this.refreshingTerm = t;
    const data = encodeEtcdEntry(
      { type: 'leaseRefreshAll', nowMs: this.deps.clock.nowMs(), extraMs: REFRESH_EXTRA_MS },
      this.deps.logFormat(),
    );
    this.deps.replica().propose(data, (o) => {
      if (this.refreshingTerm === t) this.refreshingTerm = 0;
      if (o.ok && this.raft.term === t) {
        this.readyTerm = t;
        // The refresh gave every lease a full TTL from now: older renewals are moot.
        this.renewals.clear();
      }
    });
  }

  /** The leader's periodic check: propose revokes for the leases its clock says are past. */
  expire(): void {
    this.check(true);
  }

  /**
   * Revokes for the leases past their deadline; on the periodic check (not on one armed for a
   * deadline in between, which would write checkpoints far more often) the checkpoints too.
   */
  private check(periodic: boolean): void {
    if (this.stopped) return;
    // After a stall this timer may fire before anything else: first learn whether we still lead.
    this.deps.replica().catchUpNow();
    const raft = this.raft;
    if (raft.role !== 'leader') return;
    if (!this.ready) {
      this.ensureRefresh();
      return;
    }
    const now = this.deps.clock.nowMs();
    const machine = this.deps.machine;
    for (const id of this.renewals.keys())
      if (machine.leaseInfo(id) === undefined) this.renewals.delete(id);
    const ids = machine
      .expiredLeases(now, 4 * LEASE_REVOKES_PER_CHECK_MAX)
      .filter((id) => (this.renewals.get(id) ?? -Infinity) <= now && !this.confirming.has(id))
      .slice(0, LEASE_REVOKES_PER_CHECK_MAX);
    for (const id of ids) {
      if (this.revoking.has(id)) continue;
      this.revoking.add(id);
      // Conditional: a renewal that applies first (proposed before our clock passed the
      // deadline) wins, and the revoke does nothing.
      this.deps
        .proposeRevoke(id, now, raft.term)
        .catch((e: unknown) => this.deps.warn({ err: String(e) }, 'lease revoke failed'))
        .finally(() => this.revoking.delete(id));
    }
    const { due, nextDeadlineMs } = this.scan(now);
    if (periodic && this.deps.checkpoint && due.length > 0) this.checkpoint(due, raft.term);
    this.armEarlyCheck(now, nextDeadlineMs);
  }

  /**
   * One pass over the leases by this leader's clock: those that missed a renewal (below
   * LEASE_CHECKPOINT_TTL_FRACTION and not yet expired), and the earliest deadline still ahead.
   */
  private scan(now: number): {
    due: { id: LeaseId; remainingMs: number }[];
    nextDeadlineMs: number;
  } {
    const machine = this.deps.machine;
    const due: { id: LeaseId; remainingMs: number }[] = [];
    let nextDeadlineMs = Infinity;
    for (const id of machine.leaseLeases().leases) {
      const info = machine.leaseInfo(id);
      if (info === undefined || this.revoking.has(id)) continue;
      const deadlineMs = Math.max(info.deadlineMs, this.renewals.get(id) ?? -Infinity);
      const remainingMs = deadlineMs - now;
      if (remainingMs <= 0) continue;
      nextDeadlineMs = Math.min(nextDeadlineMs, deadlineMs);
      if (remainingMs < info.ttlSeconds * 1000 * LEASE_CHECKPOINT_TTL_FRACTION)
        due.push({ id, remainingMs });
    }
    return { due, nextDeadlineMs };
  }

  /** A check at `deadlineMs` when the periodic one would come later (LEASE_EXPIRY_CHECK_MIN_MS). */
  private armEarlyCheck(now: number, deadlineMs: number): void {
    if (this.cancelEarlyCheck !== undefined) return;
    const inMs = deadlineMs - now;
    if (!(inMs < LEASE_EXPIRY_CHECK_MS)) return;
    this.cancelEarlyCheck = this.deps.clock.after(Math.max(LEASE_EXPIRY_CHECK_MIN_MS, inMs), () => {
      this.cancelEarlyCheck = undefined;
      this.check(false);
    });
  }

  /**
   * Commit, in one entry, the remainder of every lease this leader's clock says has missed a
   * renewal (below LEASE_CHECKPOINT_TTL_FRACTION and not yet expired), again at every check while
   * it stays there, so that a new leader continues from it (the header above).
   */
  private checkpoint(due: { id: LeaseId; remainingMs: number }[], term: Term): void {
    due.sort((a, b) => a.remainingMs - b.remainingMs);
    const batch = due.slice(0, LEASE_CHECKPOINTS_PER_ENTRY_MAX);
    const data = encodeEtcdEntry(
      {
        type: 'leaseCheckpoint',
        checkpoints: batch.map((c) => ({ id: c.id, remainingTtlSeconds: c.remainingMs / 1000 })),
      },
      this.deps.logFormat(),
    );
    const pending = this.pending(term);
    for (const c of batch) pending.set(c.id, (pending.get(c.id) ?? 0) + 1);
    this.deps.replica().propose(data, (o) => {
      // Applied: the state now says whether the checkpoint is in force. Otherwise it may still
      // commit under another leader: keep counting it for this term.
      if (!o.ok || this.pendingCheckpoints.term !== term) return;
      for (const c of batch) {
        const n = (pending.get(c.id) ?? 1) - 1;
        if (n <= 0) pending.delete(c.id);
        else pending.set(c.id, n);
      }
    });
  }

  private pending(term: Term): Map<LeaseId, number> {
    if (this.pendingCheckpoints.term !== term) this.pendingCheckpoints = { term, ids: new Map() };
    return this.pendingCheckpoints.ids;
  }

  /**
   * Whether a renewal of `id` must commit a reset before it is answered: a checkpoint of it is in
   * force in the applied state, or one this leader proposed in its term may still commit.
   */
  needsReset(id: LeaseId): boolean {
    if (this.deps.machine.leaseInfo(id)?.checkpointed === true) return true;
    return this.pending(this.raft.term).has(id);
  }

  /** The reset a renewal of a checkpointed lease commits first (etcd-io/etcd#13508). */
  resetEntry(id: LeaseId): Uint8Array {
    return encodeEtcdEntry(
      { type: 'leaseCheckpoint', checkpoints: [{ id, remainingTtlSeconds: null }] },
      this.deps.logFormat(),
    );
  }

  /**
   * Lease `id` was revoked (a client's LeaseRevoke this leader served): its renewals mean nothing
   * to a lease granted later under the same ID, which the expiry pass would otherwise spare, and
   * TimeToLive overstate, until the pass noticed the revoke.
   */
  forget(id: LeaseId): void {
    this.renewals.delete(id);
  }

  /** A renewal of `id` arrived and waits for its confirmation: do not expire the lease meanwhile. */
  beginRenewal(id: LeaseId): () => void {
    this.confirming.set(id, (this.confirming.get(id) ?? 0) + 1);
    return () => {
      const n = (this.confirming.get(id) ?? 1) - 1;
      if (n <= 0) this.confirming.delete(id);
      else this.confirming.set(id, n);
    };
  }

  /**
   * A renewal that arrived at `arrivalMs`, on a leader that has since confirmed its leadership:
   * TTL 0 for an unknown lease, one being revoked, or one whose deadline had passed when the
   * renewal arrived (its revoke is coming; etcd answers "not found" for a lease pending
   * revocation); else the deadline becomes arrival + TTL (the bound above).
   */
  renew(id: LeaseId, arrivalMs: number): LeaseKeepAliveResponse {
    const machine = this.deps.machine;
    const header = { revision: machine.revision };
    const info = machine.leaseInfo(id);
    if (info === undefined || this.revoking.has(id)) return { header, id, ttlSeconds: 0 };
    const renewedMs = this.renewals.get(id) ?? -Infinity;
    if (Math.max(info.deadlineMs, renewedMs) <= arrivalMs) return { header, id, ttlSeconds: 0 };
    this.renewals.set(id, Math.max(renewedMs, arrivalMs + info.ttlSeconds * 1000));
    return { header, id, ttlSeconds: info.ttlSeconds };
  }

  /** Every lease by what this leader's clock says of it; all `unknown` off a ready leader. */
  census(): LeaseCensus {
    const machine = this.deps.machine;
    if (!this.ready) return { active: 0, expiring: 0, expired: 0, unknown: machine.leaseCount };
    const now = this.deps.clock.nowMs();
    let active = 0;
    let expiring = 0;
    let expired = 0;
    for (const id of machine.leaseLeases().leases) {
      const info = machine.leaseInfo(id);
      if (info === undefined) continue;
      const remainingMs = Math.max(info.deadlineMs, this.renewals.get(id) ?? -Infinity) - now;
      if (remainingMs <= 0) expired++;
      else if (remainingMs < info.ttlSeconds * 1000 * LEASE_EXPIRING_TTL_FRACTION) expiring++;
      else active++;
    }
    return { active, expiring, expired, unknown: 0 };
  }

  /**
   * For observers (the dashboard): the deadline of `id` on this leader's clock, counting its
   * renewals, without confirming leadership; undefined unless this leader's refresh is in force
   * (before it, deadlines are another process's clock readings) or for an unknown lease.
   */
  deadlineMs(id: LeaseId): number | undefined {
    if (!this.ready) return undefined;
    const info = this.deps.machine.leaseInfo(id);
    if (info === undefined) return undefined;
    return Math.max(info.deadlineMs, this.renewals.get(id) ?? -Infinity);
  }

  /** The remaining TTL by this leader's clock, counting its renewals (after a read barrier). */
  timeToLive(id: LeaseId, keys: boolean): LeaseTimeToLiveResponse {
    const now = this.deps.clock.nowMs();
    const ttl = this.deps.machine.leaseTimeToLive(id, now, keys);
    const renewed = this.renewals.get(id);
    return ttl.ttlSeconds >= 0 && renewed !== undefined
      ? { ...ttl, ttlSeconds: Math.max(ttl.ttlSeconds, Math.trunc((renewed - now) / 1000)) }
      : ttl;
  }
}
