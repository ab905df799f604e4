// KV.Put and KV.DeleteRange (etcd's v3rpc/key.go checkPutRequest and checkDeleteRequest, and
// server/etcdserver/txn put, deleteRange and checkPut): their checks, split as etcd splits them
// into checks that need no state (done before a txn runs) and checks against the store and the
// lease table, and their effects inside an open write transaction, including lease attachment.
import type { EtcdError } from './etcd-errors.js';
import {
  ERR_EMPTY_KEY,
  ERR_KEY_NOT_FOUND,
  ERR_LEASE_NOT_FOUND,
  ERR_LEASE_PROVIDED,
  ERR_VALUE_PROVIDED,
} from './etcd-errors.js';
import { keySpan, toByteKey } from './key-range.js';
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  PutRequest,
  PutResponse,
} from './kv-types.js';
import { NO_LEASE } from './kv-types.js';
import type { LeaseTable } from './lease-table.js';
import type { MvccStore } from './mvcc.js';

/** What the write operations act on. */
export interface KvState {
  readonly store: MvccStore;
  readonly leases: LeaseTable;
}

export function validatePut(req: PutRequest): EtcdError | null {
  if (req.key.length === 0) return ERR_EMPTY_KEY;
  if (req.ignoreValue === true && req.value.length > 0) return ERR_VALUE_PROVIDED;
  if (req.ignoreLease === true && (req.lease ?? NO_LEASE) !== NO_LEASE) return ERR_LEASE_PROVIDED;
  return null;
}

/**
 * ignore_value and ignore_lease need an existing key; a lease must exist in the table (a lease
 * past its deadline but not yet revoked still does).
 */
export function precheckPut(s: KvState, req: PutRequest): EtcdError | null {
  const prev = s.store.get(toByteKey(req.key));
  if ((req.ignoreValue === true || req.ignoreLease === true) && prev === null) {
    return ERR_KEY_NOT_FOUND;
  }
  const lease = req.ignoreLease === true ? (prev?.lease ?? NO_LEASE) : (req.lease ?? NO_LEASE);
  if (lease !== NO_LEASE && !s.leases.has(lease)) return ERR_LEASE_NOT_FOUND;
  return null;
}

/** Apply a checked put inside an open write transaction. The header is filled by the caller. */
export function executePut(s: KvState, req: PutRequest): Omit<PutResponse, 'header'> {
  const key = toByteKey(req.key);
  const old = s.store.get(key);
  const value = req.ignoreValue === true && old ? old.value : req.value;
  const mutants = s.store.mutants;
  // The planted bug: ignore_lease read as "no lease".
  const kept = mutants.has('ignoreLeaseDetaches') ? NO_LEASE : (old?.lease ?? NO_LEASE);
  const lease = req.ignoreLease === true ? kept : (req.lease ?? NO_LEASE);
  const { kv, prev } = s.store.put(key, value, lease);
  if (prev && prev.lease !== NO_LEASE && prev.lease !== lease) s.leases.detach(prev.lease, key);
  if (lease !== NO_LEASE) s.leases.attach(lease, key);
  // The planted bug: the previous key-value read after the write.
  if (req.prevKv === true && prev && mutants.has('prevKvAfterWrite')) return { prevKv: kv };
  return req.prevKv === true && prev ? { prevKv: prev } : {};
}

export function validateDeleteRange(req: DeleteRangeRequest): EtcdError | null {
  return req.key.length === 0 ? ERR_EMPTY_KEY : null;
}

/** Delete every live key in the range inside an open write transaction. */
export function executeDeleteRange(
  s: KvState,
  req: DeleteRangeRequest,
): Omit<DeleteRangeResponse, 'header'> {
  const live = s.store.range(keySpan(req.key, req.rangeEnd));
  // The planted bug: range_end taken as inclusive.
  if (s.store.mutants.has('deleteRangeEndInclusive') && req.rangeEnd && req.rangeEnd.length > 1) {
    const last = s.store.get(toByteKey(req.rangeEnd));
    if (last) live.push(last);
  }
  const prevKvs: KeyValue[] = [];
  for (const kv of live) prevKvs.push(deleteKey(s, toByteKey(kv.key)));
  return { deleted: prevKvs.length, prevKvs: req.prevKv === true ? prevKvs : [] };
}

/** Delete one live key and detach it from its lease. */
export function deleteKey(s: KvState, key: string): KeyValue {
  const prev = s.store.delete(key);
  if (prev.lease !== NO_LEASE) s.leases.detach(prev.lease, key);
  return prev;
}
