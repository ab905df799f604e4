// HashKV on a member (etcd's Maintenance.HashKV and its peers' hash requests in corrupt.go): the
// key space's hash at a revision, computed a bounded step at a time (mvcc.ts KvHashJob) with the
// clock's timers in between, so that hashing a large store leaves the Raft loop its heartbeats.
import { ERR_CANCELED, isEtcdError } from '../../core/state/etcd-errors.js';
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { Clock } from '../io.js';
import { RequestError } from './request-error.js';

/** etcdserverpb.HashKVResponse's fields. */
export interface HashKvAnswer {
  readonly hash: number;
  /** The store's revision when hashing began (etcd's header revision), not the one hashed. */
  readonly revision: number;
  /** -1 before any compaction, as etcd reports it. */
  readonly compactRevision: number;
}

/**
 * The hash of `machine`'s key space at `revision` (0: the current one). Rejects with a
 * RequestError for etcd's ErrCompacted and ErrFutureRev, and ERR_CANCELED when `signal` aborts.
 */
export async function computeHashKv(
  machine: EtcdMachine,
  revision: number,
  clock: Clock,
  signal?: AbortSignal,
): Promise<HashKvAnswer> {
  const plan = machine.hashKv(revision);
  if (isEtcdError(plan)) throw new RequestError(plan);
  while (!plan.job.step()) {
    await new Promise<void>((resolve) => clock.after(0, resolve));
    if (signal?.aborted) throw new RequestError(ERR_CANCELED);
  }
  return {
    hash: plan.job.hash,
    revision: plan.revision,
    compactRevision: plan.compactRevision,
  };
}

/** Whether a value from a peer (a forwarded answer) is a HashKvAnswer. */
export function isHashKvAnswer(v: unknown): v is HashKvAnswer {
  if (typeof v !== 'object' || v === null) return false;
  const { hash, revision, compactRevision } = v as Record<string, unknown>;
  return (
    Number.isSafeInteger(hash) &&
    Number.isSafeInteger(revision) &&
    Number.isSafeInteger(compactRevision)
  );
}
