// The permission each key-space request needs while auth is on (etcd etcdserver/apply_auth.go and
// v3_server.go), checked at apply for writes so a check and the write it guards see the same auth
// revision. Unlike etcd 3.4.23, nothing is skipped: a nested Txn is checked op by op (3.4.23 did
// not look inside it; fixed in 3.4.42), and a Put inside a Txn gets the full Put check — READ for
// prev_kv and WRITE on every key already on its lease (3.4.23 checked only the key; 3.4.44).
import type { AuthAs, AuthStore } from './auth-store.js';
import type { EtcdError } from './etcd-errors.js';
import { fromByteKey, type ByteKey } from './key-range.js';
import type { DeleteRangeRequest, LeaseId, PutRequest, RequestOp, TxnRequest } from './kv-types.js';

/** The keys attached to a lease now, or none when there is no such lease. */
export type LeaseKeys = (id: LeaseId) => Iterable<ByteKey>;

/**
 * A lease's keys may be written only by who may write them all: attaching a key to a lease, or
 * revoking it, deletes them (apply_auth.go checkLeasePuts).
 */
export function checkLeaseKeys(
  auth: AuthStore,
  as: AuthAs | undefined,
  leaseKeys: LeaseKeys,
  id: LeaseId,
): EtcdError | null {
  for (const k of leaseKeys(id)) {
    const e = auth.checkKeys(as, 'write', fromByteKey(k));
    if (e) return e;
  }
  return null;
}

export function checkPut(
  auth: AuthStore,
  as: AuthAs | undefined,
  leaseKeys: LeaseKeys,
  r: PutRequest,
): EtcdError | null {
  return (
    auth.checkKeys(as, 'write', r.key) ??
    (r.lease !== undefined && r.lease !== 0n
      ? checkLeaseKeys(auth, as, leaseKeys, r.lease)
      : null) ??
    (r.prevKv === true ? auth.checkKeys(as, 'read', r.key) : null)
  );
}

export function checkDeleteRange(
  auth: AuthStore,
  as: AuthAs | undefined,
  r: DeleteRangeRequest,
): EtcdError | null {
  return (
    auth.checkKeys(as, 'write', r.key, r.rangeEnd) ??
    (r.prevKv === true ? auth.checkKeys(as, 'read', r.key, r.rangeEnd) : null)
  );
}

function checkOps(
  auth: AuthStore,
  as: AuthAs | undefined,
  leaseKeys: LeaseKeys,
  ops: readonly RequestOp[],
): EtcdError | null {
  for (const op of ops) {
    let e: EtcdError | null = null;
    switch (op.type) {
      case 'range':
        e = auth.checkKeys(as, 'read', op.request.key, op.request.rangeEnd);
        break;
      case 'put':
        e = checkPut(auth, as, leaseKeys, op.request);
        break;
      case 'deleteRange':
        e = checkDeleteRange(auth, as, op.request);
        break;
      case 'txn':
        e = checkTxn(auth, as, leaseKeys, op.request);
        break;
      case 'empty':
        break;
    }
    if (e) return e;
  }
  return null;
}

/** READ on every compare; every op of both branches, whichever runs (etcd checkTxnAuth). */
export function checkTxn(
  auth: AuthStore,
  as: AuthAs | undefined,
  leaseKeys: LeaseKeys,
  r: TxnRequest,
): EtcdError | null {
  for (const c of r.compare) {
    const e = auth.checkKeys(as, 'read', c.key, c.rangeEnd);
    if (e) return e;
  }
  return checkOps(auth, as, leaseKeys, r.success) ?? checkOps(auth, as, leaseKeys, r.failure);
}
