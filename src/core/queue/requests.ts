// The queue's requests as data: the reads and the Txns of etcd's Mutex and Election recipes
// (etcd client/v3/concurrency mutex.go, election.go, key.go), with the fences tenure adds. Both
// adapters translate them, one op for one op and one compare for one compare, into their own
// request types: the server's into the key space's (src/server/api/queue-requests.ts), the SDK's
// into its Txn builder (src/client/recipe-requests.ts). Revisions and lease IDs are bigint here,
// as on the wire.

/** A read of one key, or of the keys under a prefix in create order. */
export interface QueueRange {
  readonly key: Uint8Array;
  /** Every key that starts with `key` (clientv3.WithPrefix). */
  readonly prefix?: true;
  /** WithFirstCreate (ascending) or WithLastCreate (descending): sorted by create revision. */
  readonly createOrder?: 'ascend' | 'descend';
  readonly limit?: number;
  /** Only keys created at or before this revision (WithMaxCreateRev). */
  readonly maxCreateRevision?: bigint;
}

/** `Compare(<target>(key), operator, operand)`, over every key under `key` with `prefix`. */
export interface QueueCompare {
  readonly key: Uint8Array;
  readonly prefix?: true;
  readonly target: 'create' | 'lease';
  readonly operator: '=' | '<' | '>';
  readonly operand: bigint;
}

export type QueueOp =
  | { readonly type: 'get'; readonly range: QueueRange }
  /** No `lease`: a put that attaches the key to no lease (the SDK's own bookkeeping keys). */
  | {
      readonly type: 'put';
      readonly key: Uint8Array;
      readonly value: Uint8Array;
      readonly lease?: bigint;
    }
  | { readonly type: 'delete'; readonly key: Uint8Array };

export interface QueueTxn {
  readonly compare: readonly QueueCompare[];
  readonly success: readonly QueueOp[];
  readonly failure: readonly QueueOp[];
}

/** A contender's place in the queue: its key, the key's create revision and its lease. */
export interface QueueEntry {
  readonly key: Uint8Array;
  /** The key's create revision: the fencing token. */
  readonly token: bigint;
  readonly lease: bigint;
}

export function getOp(range: QueueRange): QueueOp {
  return { type: 'get', range };
}

/** `WithFirstCreate()`: the oldest key under the prefix, i.e. the owner (Mutex.tryAcquire). */
export function ownerRange(prefix: Uint8Array): QueueRange {
  return { key: prefix, prefix: true, createOrder: 'ascend', limit: 1 };
}

/**
 * `WithLastCreate()` + `WithMaxCreateRev(token - 1)`: the newest key created before `token`, the
 * waiter's immediate predecessor — the one key etcd's `waitDeletes` (key.go) waits on, so that a
 * release wakes exactly one waiter. The server applies `limit` after the create-revision filter
 * (etcd's `rangeLimit`; src/core/state/range-query.ts), which is what makes it the predecessor
 * and not merely the newest key.
 */
export function predecessorRange(prefix: Uint8Array, token: bigint): QueueRange {
  return {
    key: prefix,
    prefix: true,
    createOrder: 'descend',
    limit: 1,
    maxCreateRevision: token - 1n,
  };
}

/** `Compare(CreateRevision(key), "=", rev)`: 0 tests absence, a revision tests the incarnation. */
export function createRevisionIs(key: Uint8Array, rev: bigint): QueueCompare {
  return { key, target: 'create', operator: '=', operand: rev };
}

/**
 * Queue up (Mutex.tryAcquire, Election.Campaign): put the key if it does not exist, else read it
 * back, each branch followed by `extra` (whose responses follow the key's own).
 */
export function enqueueTxn(
  key: Uint8Array,
  value: Uint8Array,
  lease: bigint,
  extra: readonly QueueOp[] = [],
): QueueTxn {
  return {
    compare: [createRevisionIs(key, 0n)],
    success: [{ type: 'put', key, value, lease }, ...extra],
    failure: [getOp({ key }), ...extra],
  };
}

/**
 * The head check before the SDK declares victory: its key exists with its token and its lease,
 * and no key under the prefix was created before it — all three at one revision (Curator's
 * ephemeralOwner fix, done atomically on the server). The failure branch reads the own key back
 * so that headOf can tell a lost key from an older one still queued.
 */
export function headCheckTxn(prefix: Uint8Array, entry: QueueEntry): QueueTxn {
  return {
    compare: [
      createRevisionIs(entry.key, entry.token),
      { key: entry.key, target: 'lease', operator: '=', operand: entry.lease },
      { key: prefix, prefix: true, target: 'create', operator: '>', operand: entry.token - 1n },
    ],
    success: [],
    failure: [getOp({ key: entry.key })],
  };
}

/**
 * Run `ops` only while the key is still this incarnation (its create revision): release, resign,
 * proclaim and cleanup never touch a newer key of the same lease (etcd #22082).
 */
export function fencedTxn(
  entry: Pick<QueueEntry, 'key' | 'token'>,
  ops: readonly QueueOp[],
): QueueTxn {
  return { compare: [createRevisionIs(entry.key, entry.token)], success: ops, failure: [] };
}

/** Delete the own key only if it is still this incarnation, with `extra` in the same Txn. */
export function fencedDelete(
  entry: Pick<QueueEntry, 'key' | 'token'>,
  extra: readonly QueueOp[] = [],
): QueueTxn {
  return fencedTxn(entry, [{ type: 'delete', key: entry.key }, ...extra]);
}

/**
 * Delete the own key only if it is still this incarnation and still on this entry's lease: the
 * registry's unregister, whose key another session may overwrite in place (a put keeps the
 * create revision, so the create revision alone cannot tell the two registrations apart).
 */
export function leasedFencedDelete(entry: QueueEntry): QueueTxn {
  return {
    compare: [
      createRevisionIs(entry.key, entry.token),
      { key: entry.key, target: 'lease', operator: '=', operand: entry.lease },
    ],
    success: [{ type: 'delete', key: entry.key }],
    failure: [],
  };
}

/** Put `value` on the own key with `lease` only if it is still this incarnation (Proclaim). */
export function fencedPut(
  entry: Pick<QueueEntry, 'key' | 'token'>,
  value: Uint8Array,
  lease: bigint,
): QueueTxn {
  return fencedTxn(entry, [{ type: 'put', key: entry.key, value, lease }]);
}

/**
 * The server's fenced Unlock: delete the key only if it was created at or before `known`, the
 * revision of everything the member knew to be committed when the Unlock arrived (etcd #22082;
 * src/server/api/lock.ts says why). A missing key's create revision compares as 0: unlocking it
 * succeeds and deletes nothing.
 */
export function unlockTxn(key: Uint8Array, known: bigint): QueueTxn {
  return {
    compare: [{ key, target: 'create', operator: '<', operand: known + 1n }],
    success: [{ type: 'delete', key }],
    failure: [],
  };
}

/**
 * Delete the key if it is on `lease`, whatever its incarnation: the SDK's cleanup after a call
 * that failed before it learnt its create revision (src/client/recipe-queue.ts cleanupUnknown).
 */
export function leasedDelete(key: Uint8Array, lease: bigint): QueueTxn {
  return {
    compare: [{ key, target: 'lease', operator: '=', operand: lease }],
    success: [{ type: 'delete', key }],
    failure: [],
  };
}
