// KV.Txn (etcd's checkTxnRequest and checkIntervals in server/etcdserver/api/v3rpc/key.go, then
// Txn in server/etcdserver/txn). In etcd's order: checks that need no state at every nesting level
// (op counts against the remaining budget, empty keys, empty ops), then the duplicate-key rule,
// then every compare of the whole tree evaluated against the state before the txn (the "path"),
// then checks of the chosen ops against the store, and only then the writes, all at one revision.
import type { Mutants } from '../base/mutants.js';
import type { Revision } from '../base/units.js';
import type { EtcdError } from './etcd-errors.js';
import {
  ERR_DUPLICATE_KEY,
  ERR_EMPTY_KEY,
  ERR_KEY_NOT_FOUND,
  ERR_TOO_MANY_OPS,
} from './etcd-errors.js';
import type { ByteKey, KeySpan } from './key-range.js';
import { compareBytes, keySpan, spanContains, toByteKey } from './key-range.js';
import type {
  Compare,
  KeyValue,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from './kv-types.js';
import type { KvState } from './kv-write.js';
import {
  executeDeleteRange,
  executePut,
  precheckPut,
  validateDeleteRange,
  validatePut,
} from './kv-write.js';
import type { MvccStore } from './mvcc.js';
import { checkRangeRevision, executeRange, validateRange } from './range-query.js';

/** Checks that need no state, recursively; nested txns get the budget left by their parent. */
export function validateTxn(req: TxnRequest, opsMax: number): EtcdError | null {
  const opCount = Math.max(req.compare.length, req.success.length, req.failure.length);
  if (opCount > opsMax) return ERR_TOO_MANY_OPS;
  for (const c of req.compare) if (c.key.length === 0) return ERR_EMPTY_KEY;
  for (const op of [...req.success, ...req.failure]) {
    const e = validateOp(op, opsMax - opCount);
    if (e) return e;
  }
  return null;
}

function validateOp(op: RequestOp, opsMax: number): EtcdError | null {
  switch (op.type) {
    case 'range':
      return validateRange(op.request);
    case 'put':
      return validatePut(op.request);
    case 'deleteRange':
      return validateDeleteRange(op.request);
    case 'txn':
      return validateTxn(op.request, opsMax);
    case 'empty':
      return ERR_KEY_NOT_FOUND;
  }
}

interface Writes {
  readonly puts: Set<ByteKey>;
  readonly dels: KeySpan[];
}

/**
 * The duplicate-key rule: within one branch (nested txns included) no key may be put twice and
 * no put may fall in a deleted range. A nested txn's two branches exclude each other, so they are
 * checked against the enclosing branch but not against each other.
 */
export function checkDuplicates(req: TxnRequest): EtcdError | null {
  return branchWrites(req.success) && branchWrites(req.failure) ? null : ERR_DUPLICATE_KEY;
}

function branchWrites(ops: readonly RequestOp[]): Writes | null {
  const acc: Writes = { puts: new Set(), dels: [] };
  for (const op of ops) {
    if (op.type === 'put') {
      const key = toByteKey(op.request.key);
      if (acc.puts.has(key)) return null;
      acc.puts.add(key);
    } else if (op.type === 'deleteRange') {
      acc.dels.push(keySpan(op.request.key, op.request.rangeEnd));
    }
  }
  if (conflicts(acc, acc)) return null;
  for (const op of ops) {
    if (op.type !== 'txn') continue;
    const branches = [branchWrites(op.request.success), branchWrites(op.request.failure)];
    for (const b of branches) {
      if (b === null) return null;
      for (const k of b.puts) if (acc.puts.has(k)) return null;
      if (conflicts(b, acc) || conflicts(acc, b)) return null;
    }
    for (const b of branches) {
      if (b === null) continue;
      for (const k of b.puts) acc.puts.add(k);
      acc.dels.push(...b.dels);
    }
  }
  return acc;
}

/** True when a put of `p` falls inside a deleted range of `d`. */
function conflicts(p: Writes, d: Writes): boolean {
  for (const k of p.puts) if (d.dels.some((span) => spanContains(span, k))) return true;
  return false;
}

/** True when no op anywhere in the tree writes (such a txn is exempt from the space quota). */
export function isReadOnlyTxn(req: TxnRequest): boolean {
  return [...req.success, ...req.failure].every(
    (op) =>
      op.type === 'range' ||
      op.type === 'empty' ||
      (op.type === 'txn' && isReadOnlyTxn(op.request)),
  );
}

/** Which branch each txn in the tree takes, decided before any write (as etcd does). */
export interface TxnPath {
  readonly succeeded: boolean;
  /** One entry per nested txn op of the chosen branch, in order. */
  readonly nested: readonly TxnPath[];
}

export function txnPath(store: MvccStore, req: TxnRequest): TxnPath {
  const succeeded = req.compare.every((c) => evaluateCompare(store, c));
  const ops = succeeded ? req.success : req.failure;
  const nested: TxnPath[] = [];
  for (const op of ops) if (op.type === 'txn') nested.push(txnPath(store, op.request));
  return { succeeded, nested };
}

/** Checks of the chosen ops against the store and lease table. */
export function precheckTxn(s: KvState, req: TxnRequest, path: TxnPath): EtcdError | null {
  let n = 0;
  for (const op of path.succeeded ? req.success : req.failure) {
    let e: EtcdError | null = null;
    if (op.type === 'put') e = precheckPut(s, op.request);
    else if (op.type === 'range') e = checkRangeRevision(s.store, op.request);
    else if (op.type === 'txn') e = precheckTxn(s, op.request, path.nested[n++] as TxnPath);
    if (e) return e;
  }
  return null;
}

/**
 * Run the chosen ops inside an open write transaction; later reads see earlier writes. Headers
 * are placeholders, replaced by the caller once the txn's revision is known.
 */
export function executeTxn(s: KvState, req: TxnRequest, path: TxnPath): TxnResponse {
  const header = { revision: s.store.revision };
  const responses: ResponseOp[] = [];
  let n = 0;
  for (const op of path.succeeded ? req.success : req.failure) {
    switch (op.type) {
      case 'range':
        responses.push({ type: 'range', response: executeRange(s.store, op.request) });
        break;
      case 'put':
        responses.push({ type: 'put', response: { header, ...executePut(s, op.request) } });
        break;
      case 'deleteRange': {
        const response = { header, ...executeDeleteRange(s, op.request) };
        responses.push({ type: 'deleteRange', response });
        break;
      }
      case 'txn': {
        const response = executeTxn(s, op.request, path.nested[n++] as TxnPath);
        responses.push({ type: 'txn', response });
        break;
      }
      case 'empty':
        // Rejected by validateTxn before anything runs.
        break;
    }
  }
  return { header, succeeded: path.succeeded, responses };
}

/** Give every response in the tree the txn's final header. */
const EMPTY_HEADER: TxnResponse['header'] = Object.freeze({ revision: 0 as Revision });

export function withTxnHeader(resp: TxnResponse, revision: TxnResponse['header']): TxnResponse {
  return {
    header: revision,
    succeeded: resp.succeeded,
    responses: resp.responses.map((r): ResponseOp => {
      switch (r.type) {
        case 'range':
          return { type: 'range', response: { ...r.response, header: revision } };
        case 'put':
          return { type: 'put', response: { ...r.response, header: revision } };
        case 'deleteRange':
          return { type: 'deleteRange', response: { ...r.response, header: revision } };
        case 'txn':
          // etcd leaves a nested txn's own header empty; its operations carry the revision.
          return {
            type: 'txn',
            response: { ...withTxnHeader(r.response, revision), header: EMPTY_HEADER },
          };
      }
    }),
  };
}

const ZERO_KV: KeyValue = {
  key: new Uint8Array(0),
  createRevision: 0 as KeyValue['createRevision'],
  modRevision: 0 as KeyValue['modRevision'],
  version: 0,
  value: new Uint8Array(0),
  lease: 0n,
};

/**
 * Every key in the compare's range must satisfy it. With no key present a VALUE compare is
 * false and the others compare against a zero KeyValue, so `CREATE == 0` means "absent".
 */
export function evaluateCompare(store: MvccStore, c: Compare): boolean {
  const kvs = store.range(keySpan(c.key, c.rangeEnd));
  if (kvs.length === 0) return c.target === 'VALUE' ? false : compareKv(c, ZERO_KV, store.mutants);
  return kvs.every((kv) => compareKv(c, kv, store.mutants));
}

function compareKv(c: Compare, kv: KeyValue, mutants: Mutants): boolean {
  const d = difference(c, kv);
  switch (c.result) {
    case 'EQUAL':
      return d === 0;
    case 'GREATER':
      return d > 0;
    case 'LESS':
      // The planted bug: LESS read as less-or-equal.
      return mutants.has('txnLessAsLessEqual') ? d <= 0 : d < 0;
    case 'NOT_EQUAL':
      return d !== 0;
  }
}

/** The sign of (the key's field − the compare's operand). */
function difference(c: Compare, kv: KeyValue): number {
  switch (c.target) {
    case 'VERSION':
      return Math.sign(kv.version - c.version);
    case 'CREATE':
      return Math.sign(kv.createRevision - c.createRevision);
    case 'MOD':
      return Math.sign(kv.modRevision - c.modRevision);
    case 'VALUE':
      return Math.sign(compareBytes(kv.value, c.value));
    case 'LEASE':
      return kv.lease === c.lease ? 0 : kv.lease > c.lease ? 1 : -1;
  }
}
