// What etcd's Lock and Election servers get from the concurrency.Session they build around the
// caller's lease (etcd server/etcdserver/api/v3lock/lock.go, v3election/election.go), done
// directly against the node: the lease to queue under, the writes and the linearizable reads of
// the recipes, and cleanup that never throws.
import { enqueued, type Enqueued } from '../../core/queue/decisions.js';
import { queuePrefix, waiterKey } from '../../core/queue/layout.js';
import { enqueueTxn, fencedDelete, type QueueOp } from '../../core/queue/requests.js';
import { ERR_CANCELED } from '../../core/state/etcd-errors.js';
import type {
  DeleteRangeResponse,
  LeaseId,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../../core/state/kv-types.js';
import { SERVER_AS, type AuthAs } from '../../core/state/auth-store.js';
import type { KvBackend } from '../../replica/member/backend.js';
import { queueKv, rangeResultOf, toTxnRequest, type ServerQueueKv } from './queue-requests.js';
import { expectResult, expectValue } from './results.js';
import { ApiError, statusOf } from './status.js';

/**
 * The TTL of the lease the server grants when a Campaign or Lock names lease 0: etcd builds a
 * session with the default TTL (60 s) and orphans it at once, so nobody keeps it alive and the
 * key lapses about a minute later (`defaultSessionTTL` in etcd client/v3/concurrency/session.go).
 */
export const ORPHAN_SESSION_TTL_SECONDS = 60;

/**
 * The error a call rejects with once its signal aborted: the reason the call scope gave
 * (ERR_CANCELED, ERR_NO_LEADER, ERR_STOPPED), as the backend does.
 */
export function abortError(signal: AbortSignal): ApiError {
  return new ApiError(statusOf(signal.reason) ?? ERR_CANCELED);
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal);
}

/**
 * The lease a session of the caller's runs on: the caller's own, or for 0 a fresh orphaned one
 * (etcd's `NewSession(WithLease(0))` grants it; nothing keeps it alive). The caller's lease is
 * not checked here: like etcd, the first write with it fails with "requested lease not found".
 */
export async function sessionLease(
  backend: KvBackend,
  lease: LeaseId,
  signal: AbortSignal,
): Promise<LeaseId> {
  if (lease !== 0n) return lease;
  const r = await backend.propose(
    { type: 'leaseGrant', id: 0n, ttlSeconds: ORPHAN_SESSION_TTL_SECONDS, nowMs: 0 },
    signal,
  );
  return expectResult(r, 'leaseGrant').response.id;
}

/**
 * The recipe's own steps run as the server: their caller's rights on the queue's keys were
 * checked when the call began (requireKeysAsCaller, auth-identity.ts).
 */
const asServer = (backend: KvBackend): { readonly as?: AuthAs } =>
  backend.machine.auth.enabled ? { as: SERVER_AS } : {};

export async function proposeTxn(
  backend: KvBackend,
  request: TxnRequest,
  signal?: AbortSignal,
): Promise<TxnResponse> {
  const r = await backend.propose({ type: 'txn', request, ...asServer(backend) }, signal);
  return expectResult(r, 'txn').response;
}

export async function proposeDelete(
  backend: KvBackend,
  key: Uint8Array,
  signal?: AbortSignal,
): Promise<DeleteRangeResponse> {
  const r = await backend.propose(
    { type: 'deleteRange', request: { key }, ...asServer(backend) },
    signal,
  );
  return expectResult(r, 'deleteRange').response;
}

/**
 * A read of the applied state as it is now, with no barrier: call it right after
 * `readBarrier` (for a linearizable read) and in the same synchronous stretch as anything that
 * must see the same revision, such as opening a watch from the next one.
 */
export function rangeNow(backend: KvBackend, request: RangeRequest): RangeResponse {
  return expectValue(backend.machine.range(request));
}

/**
 * Withdraw a key this call wrote, on an error or cancellation path (etcd#21128: etcd leaves the
 * candidate key behind on some error paths). The delete is fenced by the create revision so it
 * never removes a newer incarnation of the key (#22082), and it runs without the call's signal,
 * which has usually aborted already. A failure is swallowed: the caller is already reporting the
 * error that matters, and the key's lease bounds its life.
 */
export async function withdraw(backend: KvBackend, key: Uint8Array, rev: number): Promise<void> {
  try {
    await proposeTxn(backend, toTxnRequest(fencedDelete({ key, token: BigInt(rev) })));
  } catch {
    // See above: best effort by design.
  }
}

/** A waiter queued under `name/` on its session lease (queueWaiter). */
export interface QueuedWaiter {
  readonly lease: LeaseId;
  readonly prefix: Uint8Array;
  readonly key: Uint8Array;
  readonly txn: TxnResponse;
  /** The key's create revision: this txn's revision, or the existing key's. */
  readonly rev: number;
  /** The key as it was, if an earlier call with this lease had queued it. */
  readonly existing: ServerQueueKv | undefined;
}

/**
 * The queueing step of Lock and Campaign (Mutex.tryAcquire and Election.Campaign in etcd
 * client/v3/concurrency): one Txn that puts the waiter key `name/<lease hex>` if it does not
 * exist, else reads it back, each branch followed by `extra` (whose responses follow the key's
 * own; src/core/queue/requests.ts enqueueTxn). A key found on another lease is reused, as etcd's
 * Mutex.tryAcquire reuses it without looking. Then `wait(q)` runs; if it fails and this call
 * created the key, the key is withdrawn (#21128) before the error goes on.
 */
export async function queueWaiter<T>(
  backend: KvBackend,
  name: Uint8Array,
  requestedLease: LeaseId,
  value: Uint8Array,
  extra: readonly QueueOp[],
  signal: AbortSignal,
  wait: (q: QueuedWaiter) => Promise<T>,
): Promise<T> {
  throwIfAborted(signal);
  const lease = await sessionLease(backend, requestedLease, signal);
  const prefix = queuePrefix(name);
  const key = waiterKey(prefix, lease);
  // Without the signal: once proposed, the outcome must be known so the key can be withdrawn.
  const txn = await proposeTxn(backend, toTxnRequest(enqueueTxn(key, value, lease, extra)));
  const q = enqueuedBy(lease, txn);
  const rev = Number(q.token);
  const existing = q.type === 'found' ? q.kv : undefined;
  try {
    throwIfAborted(signal);
    return await wait({ lease, prefix, key, txn, rev, existing });
  } catch (e) {
    if (txn.succeeded) await withdraw(backend, key, rev);
    throw e;
  }
}

/** What the enqueue txn did: created the key, or found it (its failure branch read it back). */
function enqueuedBy(
  lease: LeaseId,
  txn: TxnResponse,
): Exclude<Enqueued<ServerQueueKv>, { type: 'vanished' }> {
  const existing = txn.succeeded ? undefined : queueKv(rangeResultOf(txn.responses[0])[0]);
  const q = enqueued(lease, txn.succeeded, BigInt(txn.header.revision), existing);
  if (q.type === 'vanished') throw new Error('lock: existing key not read back');
  return q;
}
