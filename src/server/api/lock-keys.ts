// The key layout that the Lock and Election services share with etcd's client recipes (etcd
// client/v3/concurrency/mutex.go and election.go): every waiter or candidate owns one key
// `name + "/" + hex(lease)`, and the order of the queue is the order of those keys' create
// revisions. Keeping this layout byte-for-byte is what lets `etcdctl lock`, Go's
// concurrency.Mutex/Election and these services queue on the same name together. Pure functions
// only: requests to build, nothing to run.
import { prefixEnd } from '../../core/state/key-range.js';
import type { Compare, LeaseId, RangeRequest, RequestOp } from '../../core/state/kv-types.js';

const SLASH = 0x2f;

/** The queue's prefix: NewMutex and NewElection store `pfx + "/"` (client/v3/concurrency). */
export function queuePrefix(name: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(name.length + 1);
  prefix.set(name);
  prefix[name.length] = SLASH;
  return prefix;
}

/**
 * A session's key in the queue: the prefix and the lease ID in lowercase hex, as Go's `%x`
 * prints an int64 (so a negative ID keeps its minus sign, like Go's).
 */
export function waiterKey(prefix: Uint8Array, lease: LeaseId): Uint8Array {
  const hex = new TextEncoder().encode(lease.toString(16));
  const key = new Uint8Array(prefix.length + hex.length);
  key.set(prefix);
  key.set(hex, prefix.length);
  return key;
}

/** `WithFirstCreate()`: the oldest key under the prefix, i.e. the owner (Mutex.tryAcquire). */
export function firstCreated(prefix: Uint8Array): RangeRequest {
  return {
    key: prefix,
    rangeEnd: prefixEnd(prefix),
    sortTarget: 'CREATE',
    sortOrder: 'ASCEND',
    limit: 1,
  };
}

/**
 * `WithLastCreate()` + `WithMaxCreateRev(rev)`: the newest key created at or below `rev`, i.e.
 * the waiter's immediate predecessor when `rev` is its own create revision − 1. The server
 * applies `limit` after the create-revision filter (range-query.ts; etcd's `rangeLimit` in
 * server/etcdserver/txn), which is what makes this the predecessor and not merely the newest key
 * (etcd's `waitDeletes` in client/v3/concurrency/key.go relies on it).
 */
export function lastCreatedAtOrBelow(prefix: Uint8Array, rev: number): RangeRequest {
  return {
    key: prefix,
    rangeEnd: prefixEnd(prefix),
    sortTarget: 'CREATE',
    sortOrder: 'DESCEND',
    limit: 1,
    maxCreateRevision: rev,
  };
}

/** `Compare(CreateRevision(key), "=", rev)`: 0 tests absence, a revision tests ownership. */
export function createRevisionIs(key: Uint8Array, rev: number): Compare {
  return { target: 'CREATE', result: 'EQUAL', key, createRevision: rev };
}

/** The key was created at `rev` or before (or does not exist: its create revision is 0). */
export function createdAtOrBefore(key: Uint8Array, rev: number): Compare {
  return { result: 'LESS', key, target: 'CREATE', createRevision: rev + 1 };
}

export function getOp(request: RangeRequest): RequestOp {
  return { type: 'range', request };
}

export function putOp(key: Uint8Array, value: Uint8Array, lease: LeaseId): RequestOp {
  return { type: 'put', request: { key, value, lease } };
}

export function deleteOp(key: Uint8Array): RequestOp {
  return { type: 'deleteRange', request: { key } };
}
