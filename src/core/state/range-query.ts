// KV.Range (etcd's checkRangeRequest in v3rpc/key.go; checkRange and executeRange in
// server/etcdserver/txn): validation, revision bounds, and the read itself with etcd's order of
// work: fetch the range at the read revision, count it, apply the min/max revision filters, sort,
// then cut to the limit.
import type { EtcdError } from './etcd-errors.js';
import {
  ERR_COMPACTED,
  ERR_EMPTY_KEY,
  ERR_FUTURE_REV,
  ERR_INVALID_SORT_OPTION,
} from './etcd-errors.js';
import { compareBytes, keySpan } from './key-range.js';
import type { KeyValue, RangeRequest, RangeResponse, SortOrder, SortTarget } from './kv-types.js';
import { EMPTY_BYTES } from './kv-types.js';
import type { MvccStore } from './mvcc.js';

const SORT_ORDERS: readonly string[] = ['NONE', 'ASCEND', 'DESCEND'] satisfies SortOrder[];
const SORT_TARGETS: readonly string[] = [
  'KEY',
  'VERSION',
  'CREATE',
  'MOD',
  'VALUE',
] satisfies SortTarget[];

/** Checks that need no state: the key, and the sort enums. */
export function validateRange(req: RangeRequest): EtcdError | null {
  if (req.key.length === 0) return ERR_EMPTY_KEY;
  if (req.sortOrder !== undefined && !SORT_ORDERS.includes(req.sortOrder)) {
    return ERR_INVALID_SORT_OPTION;
  }
  if (req.sortTarget !== undefined && !SORT_TARGETS.includes(req.sortTarget)) {
    return ERR_INVALID_SORT_OPTION;
  }
  return null;
}

/** A read at a past revision must be at or above the compact revision and not in the future. */
export function checkRangeRevision(store: MvccStore, req: RangeRequest): EtcdError | null {
  const rev = req.revision ?? 0;
  if (rev <= 0) return null;
  if (rev > store.revision) return ERR_FUTURE_REV;
  if (rev < store.compactRevision) return ERR_COMPACTED;
  return null;
}

/** Range with all checks; the header carries the current revision even for a past read. */
export function range(store: MvccStore, req: RangeRequest): RangeResponse | EtcdError {
  return validateRange(req) ?? checkRangeRevision(store, req) ?? executeRange(store, req);
}

/** The read itself, for a request already validated and checked. */
export function executeRange(store: MvccStore, req: RangeRequest): RangeResponse {
  const readRev = (req.revision ?? 0) > 0 ? (req.revision as number) : store.readRevision;
  let kvs = store.range(keySpan(req.key, req.rangeEnd), readRev);
  const count = kvs.length;
  const header = { revision: store.revision };
  if (req.countOnly === true) return { header, kvs: [], more: false, count };
  kvs = kvs.filter(revisionFilter(req));
  kvs = sortKvs(kvs, req.sortOrder ?? 'NONE', req.sortTarget ?? 'KEY');
  let more = false;
  const limit = req.limit ?? 0;
  if (limit > 0 && kvs.length > limit) {
    kvs = kvs.slice(0, limit);
    more = true;
  }
  if (req.keysOnly === true) kvs = kvs.map((kv) => ({ ...kv, value: EMPTY_BYTES }));
  // The planted bug: the count taken after the limit.
  if (store.mutants.has('rangeCountAfterLimit')) return { header, kvs, more, count: kvs.length };
  return { header, kvs, more, count };
}

function revisionFilter(req: RangeRequest): (kv: KeyValue) => boolean {
  const minMod = req.minModRevision ?? 0;
  const maxMod = req.maxModRevision ?? 0;
  const minCreate = req.minCreateRevision ?? 0;
  const maxCreate = req.maxCreateRevision ?? 0;
  return (kv) =>
    (minMod === 0 || kv.modRevision >= minMod) &&
    (maxMod === 0 || kv.modRevision <= maxMod) &&
    (minCreate === 0 || kv.createRevision >= minCreate) &&
    (maxCreate === 0 || kv.createRevision <= maxCreate);
}

/**
 * Sort a key-ordered list. NONE with target KEY keeps key order; NONE with another target means
 * ASCEND. The sort is stable, so ties stay in key order (etcd leaves their order unspecified).
 */
export function sortKvs(kvs: KeyValue[], order: SortOrder, target: SortTarget): KeyValue[] {
  if (order === 'NONE' && target === 'KEY') return kvs;
  const sign = order === 'DESCEND' ? -1 : 1;
  const cmp = targetComparator(target);
  return [...kvs].sort((a, b) => sign * cmp(a, b));
}

function targetComparator(target: SortTarget): (a: KeyValue, b: KeyValue) => number {
  switch (target) {
    case 'KEY':
      return (a, b) => compareBytes(a.key, b.key);
    case 'VERSION':
      return (a, b) => a.version - b.version;
    case 'CREATE':
      return (a, b) => a.createRevision - b.createRevision;
    case 'MOD':
      return (a, b) => a.modRevision - b.modRevision;
    case 'VALUE':
      return (a, b) => compareBytes(a.value, b.value);
  }
}
