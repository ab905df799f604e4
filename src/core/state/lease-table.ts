// The replicated lease table (etcd's server/lease/lessor.go). Expiry is never decided here by
// reading a clock: commands carry the leader's monotonic time (`nowMs`) in, every replica records
// the same deadline, and the leader proposes a revoke when its own clock passes one
// (docs/leases-and-time.md). A new leader first gives every lease a fresh TTL (`refreshAll`),
// because it cannot know how long the old leader had already waited — unless the old leader
// checkpointed the lease's remaining TTL into the log (`checkpoint`, etcd's LeaseCheckpoint): then
// the new leader continues from that remainder, stretched for clock rates (lease-clock.ts states
// why that keeps the lease contract).
import { assert } from '../base/assert.js';
import { CLOCK_RATE_ERROR_MAX } from '../base/clock-drift.js';
import { FNV_OFFSET, fnvNumber, fnvString } from '../base/hash.js';
import type { ByteKey } from './key-range.js';
import type { LeaseId } from './kv-types.js';

export interface Lease {
  readonly id: LeaseId;
  /** The granted TTL, in seconds. */
  readonly ttlSeconds: number;
  /** Leader-clock deadline after which the leader should propose a revoke. */
  expiryMs: number;
  /**
   * The last checkpointed remaining TTL in seconds (fractional: ms / 1000), or null: a new leader
   * grants the full TTL. Cleared by a reset, a renewal entry and the refresh that consumed it.
   */
  checkpointSeconds: number | null;
  /** Attached keys. */
  readonly keys: Set<ByteKey>;
}

/** A lease as an observer (the dashboard) reads it: live data, not to be kept or changed. */
export interface LeaseView {
  readonly id: LeaseId;
  readonly ttlSeconds: number;
  /** The deadline on the clock of the leader that stamped it (renewals are not in it). */
  readonly expiryMs: number;
  readonly keys: ReadonlySet<ByteKey>;
}

export interface LeaseData {
  readonly id: LeaseId;
  readonly ttlSeconds: number;
  readonly expiryMs: number;
  readonly checkpointSeconds: number | null;
  readonly keys: readonly ByteKey[];
}

const MS_PER_SECOND = 1000;
/** Lease IDs are int64s on the wire; IDs the machine chooses are positive. */
export const LEASE_ID_MAX = (1n << 63n) - 1n;
export const LEASE_ID_MIN = -(1n << 63n);

/**
 * How long a refresh lets a lease live from the new leader's takeover, in ms of its clock: the
 * full TTL plus `extraMs` without a checkpoint; with one, the remainder the old leader measured,
 * stretched by 2ρ (the old leader's clock may have run ρ slow against true time and the new one's
 * ρ fast: clock-drift.ts), capped at the former.
 */
export function refreshedLifeMs(
  ttlSeconds: number,
  checkpointSeconds: number | null,
  extraMs: number,
): number {
  const fullMs = ttlSeconds * MS_PER_SECOND + extraMs;
  if (checkpointSeconds === null) return fullMs;
  return Math.min(fullMs, checkpointSeconds * MS_PER_SECOND * (1 + 2 * CLOCK_RATE_ERROR_MAX));
}

export class LeaseTable {
  private readonly leases = new Map<LeaseId, Lease>();

  get size(): number {
    return this.leases.size;
  }

  /** Every lease in grant order, for observers. */
  views(): IterableIterator<LeaseView> {
    return this.leases.values();
  }

  get(id: LeaseId): Lease | undefined {
    return this.leases.get(id);
  }

  has(id: LeaseId): boolean {
    return this.leases.has(id);
  }

  /** Grant a lease; the caller has checked that `id` is free and the TTL is in bounds. */
  grant(id: LeaseId, ttlSeconds: number, nowMs: number): Lease {
    assert(id !== 0n && id >= LEASE_ID_MIN && id <= LEASE_ID_MAX, 'lease: ID out of range');
    assert(!this.leases.has(id), 'lease: grant of an existing ID');
    const lease: Lease = {
      id,
      ttlSeconds,
      expiryMs: nowMs + ttlSeconds * MS_PER_SECOND,
      checkpointSeconds: null,
      keys: new Set(),
    };
    this.leases.set(id, lease);
    return lease;
  }

  /** Remove a lease; returns its attached keys in byte order, for deleting in one revision. */
  revoke(id: LeaseId): ByteKey[] {
    const lease = this.leases.get(id);
    assert(lease !== undefined, 'lease: revoke of an unknown ID');
    this.leases.delete(id);
    return [...lease.keys].sort();
  }

  /**
   * Renew: the deadline becomes now + granted TTL. Returns the TTL, or 0 for an unknown lease
   * and for one whose deadline has passed: the leader revokes those, and a renewal answered
   * "alive" just before its keys go would tell a lock holder it still holds (etcd's lessor
   * Renew: renewing a lease pending revocation answers "not found").
   */
  keepAlive(id: LeaseId, nowMs: number): number {
    const lease = this.leases.get(id);
    if (lease === undefined || lease.expiryMs <= nowMs) return 0;
    lease.expiryMs = nowMs + lease.ttlSeconds * MS_PER_SECOND;
    lease.checkpointSeconds = null;
    return lease.ttlSeconds;
  }

  /**
   * Record a lease's remaining TTL (etcd's LeaseCheckpoint), so that a new leader continues from
   * it instead of granting the full TTL again; null is a reset (the leader renewed the lease: a
   * new leader must grant the full TTL again, etcd #13491). Unknown IDs are ignored: the lease
   * may have been revoked after the leader took the checkpoint.
   */
  checkpoint(id: LeaseId, remainingSeconds: number | null): void {
    const lease = this.leases.get(id);
    if (!lease) return;
    lease.checkpointSeconds =
      remainingSeconds === null ? null : Math.max(0, Math.min(remainingSeconds, lease.ttlSeconds));
  }

  /**
   * A new leader's promotion (etcd's lessor Promote): every lease gets now + TTL + extra, or,
   * when it has a checkpoint, now + its remainder × (1 + 2ρ), never more than the former
   * (lease-clock.ts says why either keeps the lease contract). The checkpoint is consumed: the
   * deadline is now on this leader's clock, and a later leader without a newer checkpoint grants
   * the full TTL again.
   */
  refreshAll(nowMs: number, extraMs: number): void {
    for (const lease of this.leases.values()) {
      lease.expiryMs = nowMs + refreshedLifeMs(lease.ttlSeconds, lease.checkpointSeconds, extraMs);
      lease.checkpointSeconds = null;
    }
  }

  attach(id: LeaseId, key: ByteKey): void {
    const lease = this.leases.get(id);
    assert(lease !== undefined, 'lease: attach to an unknown ID');
    lease.keys.add(key);
  }

  detach(id: LeaseId, key: ByteKey): void {
    // The lease may already be gone: revoke detaches its keys by deleting them.
    this.leases.get(id)?.keys.delete(key);
  }

  /** Remaining whole seconds (truncated, at least 0) by the caller's clock. */
  remainingSeconds(id: LeaseId, nowMs: number): number {
    const lease = this.leases.get(id);
    assert(lease !== undefined, 'lease: remaining of an unknown ID');
    return Math.max(0, Math.trunc((lease.expiryMs - nowMs) / MS_PER_SECOND));
  }

  /** The leader-clock deadline of a lease, or undefined when there is no such lease. */
  deadlineMs(id: LeaseId): number | undefined {
    return this.leases.get(id)?.expiryMs;
  }

  /** Leases whose deadline is at or before `nowMs`, earliest first, at most `max`. */
  expired(nowMs: number, max: number): LeaseId[] {
    return [...this.leases.values()]
      .filter((l) => l.expiryMs <= nowMs)
      .sort((a, b) => a.expiryMs - b.expiryMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, max)
      .map((l) => l.id);
  }

  /** Every lease ID, ascending. */
  ids(): LeaseId[] {
    return [...this.leases.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /**
   * A deterministic, unused, positive ID for a grant that asked for ID 0. etcd picks a random
   * one; replicas must agree, so it is drawn from a hash of the log index and an attempt number.
   */
  chooseId(seed: number): LeaseId {
    for (let attempt = 0; ; attempt++) {
      const hi = fnvNumber(fnvNumber(fnvString(FNV_OFFSET, 'lease'), seed), attempt);
      const lo = fnvNumber(hi, attempt + 1);
      // 31 + 32 bits: positive in int64, and never 0.
      const id = (BigInt(hi >>> 1) << 32n) | BigInt(lo);
      if (id !== 0n && !this.leases.has(id)) return id;
      assert(attempt < 1000, 'lease: no free ID found');
    }
  }

  toData(): LeaseData[] {
    return this.ids().map((id) => {
      const l = this.leases.get(id) as Lease;
      return {
        id,
        ttlSeconds: l.ttlSeconds,
        expiryMs: l.expiryMs,
        checkpointSeconds: l.checkpointSeconds,
        keys: [...l.keys].sort(),
      };
    });
  }

  static fromData(data: readonly LeaseData[]): LeaseTable {
    const t = new LeaseTable();
    for (const d of data) {
      t.leases.set(d.id, {
        id: d.id,
        ttlSeconds: d.ttlSeconds,
        expiryMs: d.expiryMs,
        checkpointSeconds: d.checkpointSeconds,
        keys: new Set(d.keys),
      });
    }
    return t;
  }

  digest(h: number): number {
    for (const d of this.toData()) {
      h = fnvString(h, d.id.toString());
      h = fnvNumber(h, d.ttlSeconds);
      h = fnvNumber(h, d.expiryMs);
      h = fnvNumber(h, d.checkpointSeconds ?? -1);
      for (const k of d.keys) h = fnvString(h, k);
    }
    return h;
  }
}
