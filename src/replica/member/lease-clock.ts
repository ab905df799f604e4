// The leader's lease clock. Lease deadlines exist only on the leader's monotonic clock: the leader
// stamps lease commands with it, refreshes every lease when it takes over (it cannot know how long
// the old leader had already waited), renews leases on keepalives, answers TTL queries, and
// proposes a revoke for every lease its clock says has expired. A follower forwards all of these to
// the leader.
import type { Term } from '../../core/base/units.js';
import type { LeaseId, LeaseKeepAliveResponse } from '../../core/state/kv-types.js';
import type { LeaseTimeToLiveResponse } from '../../core/state/kv-types.js';
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { Clock } from '../io.js';
import type { Replica } from '../replica.js';
import { etcdErrorOf } from './request-error.js';
import { encodeEtcdEntry, type ServerResult } from './server-machine.js';

/** The leader checks lease deadlines this often (etcd: 500 ms). */
export const LEASE_EXPIRY_CHECK_MS = 500;
/** Revokes proposed per check at most (etcd rate-limits to 1000/s). */
export const LEASE_REVOKES_PER_CHECK_MAX = 500;

export interface LeaseClockDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly machine: EtcdMachine;
  readonly clock: Clock;
  /** The election timeout, in ms of the leader's clock: the refresh's extra time. */
  readonly electionMs: number;
  /** Propose a revoke through the log (its outcome only matters to the log). */
  readonly proposeRevoke: (id: LeaseId, ifExpiredAtMs: number) => Promise<unknown>;
  readonly warn: (obj: object, msg: string) => void;
}

export class LeaseClock {
  /** The term whose leader has refreshed every lease: only then may it expire leases. */
  private readyTerm: Term | 0 = 0;
  private refreshingTerm: Term | 0 = 0;
  /**
   * Renewals this leader granted in its current term, as deadlines on its clock. Renewals are
   * not written to the log (etcd's lessor does the same): a new leader refreshes every lease to a
   * full TTL plus an election timeout from its own takeover.
   */
  private readonly renewals = new Map<LeaseId, number>();
  private readonly revoking = new Set<LeaseId>();
  private stopped = false;

  constructor(private readonly deps: LeaseClockDeps) {}

  private get raft(): Replica<ServerResult>['raft'] {
    return this.deps.replica().raft;
  }

  stop(): void {
    this.stopped = true;
  }

  /** True once this leader's refresh applied in its current term. */
  get ready(): boolean {
    const raft = this.raft;
    return raft.role === 'leader' && this.readyTerm === raft.term;
  }

  /**
   * A new leader gives every lease a fresh TTL on its own clock before it may expire, renew,
   * grant or report any; until that is applied, lease deadlines in the state are another
   * process's clock readings. Retried until it lands in this term.
   */
  ensureRefresh(): void {
    const raft = this.raft;
    if (raft.role !== 'leader' || this.readyTerm === raft.term) return;
    if (this.refreshingTerm === raft.term) return;
    const t = raft.term;
    this.refreshingTerm = t;
    const data = encodeEtcdEntry({
      type: 'leaseRefreshAll',
      nowMs: this.deps.clock.nowMs(),
      extraMs: this.deps.electionMs,
    });
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
    const raft = this.raft;
    if (this.stopped || raft.role !== 'leader') return;
    if (this.readyTerm !== raft.term) {
      this.ensureRefresh();
      return;
    }
    const now = this.deps.clock.nowMs();
    const machine = this.deps.machine;
    for (const id of this.renewals.keys())
      if (machine.leaseInfo(id) === undefined) this.renewals.delete(id);
    const ids = machine
      .expiredLeases(now, 4 * LEASE_REVOKES_PER_CHECK_MAX)
      .filter((id) => (this.renewals.get(id) ?? -Infinity) <= now)
      .slice(0, LEASE_REVOKES_PER_CHECK_MAX);
    for (const id of ids) {
      if (this.revoking.has(id)) continue;
      this.revoking.add(id);
      // Conditional: a renewal that applies first (proposed before our clock passed the
      // deadline) wins, and the revoke does nothing.
      this.deps
        .proposeRevoke(id, now)
        .catch((e: unknown) => {
          // An expected failure (no longer leader, a timeout) is retried by the next check.
          if (etcdErrorOf(e) === null) this.deps.warn({ err: String(e) }, 'lease revoke failed');
        })
        .finally(() => this.revoking.delete(id));
    }
  }

  /**
   * A renewal on the leader: TTL 0 for an unknown lease, one being revoked, or one whose deadline
   * has passed (its revoke is coming; etcd answers "not found" for a lease pending revocation);
   * else a new deadline of now + TTL.
   */
  renew(id: LeaseId): LeaseKeepAliveResponse {
    const machine = this.deps.machine;
    const header = { revision: machine.revision };
    const info = machine.leaseInfo(id);
    const now = this.deps.clock.nowMs();
    if (info === undefined || this.revoking.has(id)) return { header, id, ttlSeconds: 0 };
    if (Math.max(info.deadlineMs, this.renewals.get(id) ?? -Infinity) <= now)
      return { header, id, ttlSeconds: 0 };
    this.renewals.set(id, now + info.ttlSeconds * 1000);
    return { header, id, ttlSeconds: info.ttlSeconds };
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
