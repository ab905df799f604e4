// What the leases workload records, in the lease-contract checker's terms (src/check/
// lease-contract.ts), plus what a report wants to say about each record: which call it was and
// which member answered. Losses are kept to the first of each kind of evidence per lease (a read
// through m1, a watch through m2, a keepalive, …): the first loss of a lease is the tightest
// bound on when it went, and any promise a later loss breaks the first breaks too (the checker
// weighs every renewal against every loss), so the rest would only repeat the verdict.
import type { LeaseLoss, LeaseRenewal, LeaseRevocation } from '../../check/lease-contract.js';

export const LEASE_KEY_PREFIX = 'chaos/leases/';

/** A lease's `k`-th key (0: `…/k`, 1: `…/k2`). */
export function leaseKey(lease: string, k: number): string {
  return `${LEASE_KEY_PREFIX}${lease}/k${k === 0 ? '' : k + 1}`;
}

/** The lease a key of this workload belongs to, from its name. */
export function leaseOfKey(key: string): string | undefined {
  const m = /^chaos\/leases\/(\d+)\//.exec(key);
  return m?.[1];
}

export interface RecordedRenewal extends LeaseRenewal {
  readonly via: 'grant' | 'keepalive';
  /** The member that answered (from the response header), by name. */
  readonly answeredBy: string;
}

export interface RecordedLoss extends LeaseLoss {
  /** The kind of evidence and where it came from: 'read m1', 'watch m2', 'keepalive', … */
  readonly source: string;
}

/** A key put with the lease, once its Put was acknowledged. */
export interface AttachedKey {
  readonly key: string;
  readonly lease: string;
  readonly ackedMs: number;
}

export class LeaseEvents {
  readonly renewals: RecordedRenewal[] = [];
  readonly losses: RecordedLoss[] = [];
  readonly revocations: LeaseRevocation[] = [];
  /** By key, in the order their Puts were acknowledged. */
  readonly attached = new Map<string, AttachedKey>();
  readonly #lossSources = new Set<string>();

  renewal(r: RecordedRenewal): void {
    this.renewals.push(r);
  }

  revocation(r: LeaseRevocation): void {
    this.revocations.push(r);
  }

  attach(a: AttachedKey): void {
    this.attached.set(a.key, a);
  }

  /** A loss, unless this lease already has one from the same source. */
  loss(l: RecordedLoss): void {
    const id = `${l.lease} ${l.source}`;
    if (this.#lossSources.has(id)) return;
    this.#lossSources.add(id);
    this.losses.push(l);
  }
}
