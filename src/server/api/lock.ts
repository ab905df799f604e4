// The Lock service (`v3lockpb.Lock`, etcd server/etcdserver/api/v3lock/lock.go): etcd's server
// runs the Go Mutex recipe (client/v3/concurrency/mutex.go) around the caller's lease, and so
// does this one, writing through the node's log and waiting on its applied state. Same key
// layout and queue order as Go's concurrency.Mutex and `etcdctl lock`, so all three exclude each
// other on one name.
//
// A lock is only as safe as its fencing: callers must guard their writes with the key's create
// revision (etcd docs, "Notes on the usage of lock and lease", etcd PR #11490; Kingsbury,
// Jepsen: etcd 3.4.3, 2020).
import { ERR_SESSION_EXPIRED, ERR_UNLOCK_KEY_NEWER } from '../../core/state/etcd-errors.js';
import type { LeaseId, ResponseHeader } from '../../core/state/kv-types.js';
import { EMPTY_BYTES } from '../../core/state/kv-types.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { CallInfo, ServiceHandlers, WireObject } from './convert.js';
import { asMessage, bigintField, bytesField, toBuffer, toProtoHeader } from './convert.js';
import { NO_MUTANTS, type Mutants } from '../../core/base/mutants.js';
import { ownsQueue } from '../../core/queue/decisions.js';
import { queuePrefix } from '../../core/queue/layout.js';
import { getOp, ownerRange, unlockTxn } from '../../core/queue/requests.js';
import { proposeDelete, proposeTxn, queueWaiter, throwIfAborted } from './lock-session.js';
import { queueKv, rangeResultOf, toTxnRequest } from './queue-requests.js';
import { ApiError } from './status.js';
import { authOn, requireKeysAsCaller, type KeyNeed } from './auth-identity.js';
import { prefixEnd } from '../../core/state/key-range.js';
import { waitForTurn } from './wait-deletes.js';
import type { LockNames } from './lock-names.js';

export interface LockGranted {
  /** The acquisition header (see lockMutex). */
  readonly header: ResponseHeader;
  /** The lock key; its create revision is the fencing token. */
  readonly key: Uint8Array;
}

/**
 * Acquire the lock `name` for `lease` (0: an orphaned 60 s lease), FIFO by create revision.
 *
 * 1. `Txn(if CreateRevision(key) == 0 then [Put(key, "", lease), Get(owner)] else [Get(key),
 *    Get(owner)])`: queue up, or reuse the key this lease already has (locking twice with one
 *    lease is a no-op, as etcd's Mutex.tryAcquire reuses the key).
 * 2. Owner is me: held; the header is the txn's.
 * 3. Otherwise wait for the predecessor only (wait-deletes.ts); the header is that of the read
 *    that found the turn, i.e. the acquisition time (as etcd's Mutex.Lock returns the header of
 *    its final Get). If the own key went away meanwhile: `mutex: session is expired` (code
 *    Unknown, as etcd's plain Go error).
 *
 * On cancellation or any error after queueing, the key is withdrawn if this call created it.
 * A key that already existed belongs to an earlier call with the same lease, which is still
 * using it (etcd would delete it too and so break that call's lock).
 */
export async function lockMutex(
  backend: KvBackend,
  name: Uint8Array,
  requestedLease: LeaseId,
  signal: AbortSignal,
): Promise<LockGranted> {
  const owners = [getOp(ownerRange(queuePrefix(name)))];
  return queueWaiter(
    backend,
    name,
    requestedLease,
    EMPTY_BYTES,
    owners,
    signal,
    async ({ prefix, key, txn, rev }) => {
      const owner = queueKv(rangeResultOf(txn.responses[1])[0]);
      if (ownsQueue({ token: BigInt(rev) }, owner)) return { header: txn.header, key };
      const outcome = await waitForTurn(backend, prefix, key, rev, signal);
      if (outcome.type === 'lost') throw new ApiError(ERR_SESSION_EXPIRED);
      throwIfAborted(signal); // a client that left would never learn it holds the lock
      return { header: outcome.header, key };
    },
  );
}

/**
 * Unlock deletes the key only if it was created before the Unlock reached this member: at or
 * before the revision of everything this member knew to be committed then. In etcd it is a plain
 * `Delete(key)` (v3lock/lock.go), so an Unlock that is delivered late — it waited in a
 * partitioned peer link, its client meanwhile unlocked through another member and locked again
 * with the same lease, hence the same key name — deletes the newer holder's key and lets the next
 * waiter in while that holder's lease is alive (etcd #22082). The fence is taken on arrival, not
 * after a read barrier: a barrier that completes after the partition heals would already include
 * the newer key. A key created later is never the one the caller meant, unless this member had
 * not yet heard that the caller's own grant was committed; either way nothing is deleted and the
 * caller is told to retry (ERR_UNLOCK_KEY_NEWER), which then finds the grant known. What the fence
 * cannot see is the request's own trip to this handler: an Unlock that reaches it after its client
 * gave up (delayed on the way, or read from the socket of a member that was stopped) is judged as
 * if sent on arrival. etcd's Unlock carries only the key, so nothing on the wire tells them apart.
 */
export async function unlockMutex(
  backend: KvBackend,
  key: Uint8Array,
  signal: AbortSignal,
  mutants: Mutants = NO_MUTANTS,
): Promise<ResponseHeader> {
  // The planted bug: etcd's plain delete.
  if (mutants.has('unlockUnfenced')) return (await proposeDelete(backend, key, signal)).header;
  let known: number;
  if (mutants.has('unlockFenceAfterBarrier')) {
    // The planted bug (the first fix): the fence is whatever the barrier lets this member see.
    await backend.readBarrier(signal);
    known = backend.machine.revision;
  } else known = await backend.knownCommittedRevision(signal);
  const txn = await proposeTxn(backend, toTxnRequest(unlockTxn(key, BigInt(known))), signal);
  if (!txn.succeeded) throw new ApiError(ERR_UNLOCK_KEY_NEWER);
  return txn.header;
}

/** What taking a place in the queue `name` needs: read and write every key under `name/`. */
export function queueNeeds(m: WireObject): KeyNeed[] {
  const prefix = queuePrefix(bytesField(m, 'name'));
  const rangeEnd = prefixEnd(prefix);
  return [
    { need: 'read', key: prefix, rangeEnd },
    { need: 'write', key: prefix, rangeEnd },
  ];
}

export function lockHandlers(
  backend: KvBackend,
  mutants: Mutants = NO_MUTANTS,
  names?: LockNames,
): ServiceHandlers {
  return {
    unary: {
      '/v3lockpb.Lock/Lock': async (req: unknown, call: CallInfo) => {
        const m = asMessage(req);
        names?.note(bytesField(m, 'name'));
        if (authOn(backend)) await requireKeysAsCaller(backend, call, queueNeeds(m));
        const r = await lockMutex(
          backend,
          bytesField(m, 'name'),
          bigintField(m, 'lease'),
          call.signal,
        );
        return { header: toProtoHeader(backend, r.header.revision), key: toBuffer(r.key) };
      },
      '/v3lockpb.Lock/Unlock': async (req: unknown, call: CallInfo) => {
        const key = bytesField(asMessage(req), 'key');
        if (authOn(backend)) await requireKeysAsCaller(backend, call, [{ need: 'write', key }]);
        const header = await unlockMutex(backend, key, call.signal, mutants);
        return { header: toProtoHeader(backend, header.revision) };
      },
    },
    serverStream: {},
  };
}
