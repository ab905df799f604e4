// Operations (Range, Put, DeleteRange, nested Txn), compares, and the Txn builder
// (etcd's api/etcdserverpb/rpc.proto: RangeRequest, PutRequest, DeleteRangeRequest, TxnRequest).
// The same operation shapes serve the KV methods and Txn branches.
//
//   const r = await client.kv
//     .txn()
//     .if(compare.createRevision('lock/a', '=', 0n))
//     .then(op.put('lock/a', 'me', { lease }))
//     .else(op.get('lock/a'))
//     .commit({ timeoutMs: 2_000 });
import type { CallOptions } from './call-options.js';
import {
  decodeHeader,
  decodeKeyValues,
  decodeOptionalKeyValue,
  int64,
  rangeEnd,
  rangeEndField,
  toBuffer,
  type Bytes,
  type KeyRangeOptions,
  type KeyValue,
  type ResponseHeader,
  type WireObject,
} from './codec.js';
import type { Connection } from './connection.js';

export type SortOrder = 'none' | 'ascend' | 'descend';
export type SortTarget = 'key' | 'version' | 'create' | 'mod' | 'value';

export interface RangeOptions extends KeyRangeOptions {
  /** Read at this revision (≤ 0n or absent: the newest); below the compaction → CompactedError. */
  readonly revision?: bigint;
  /** At most this many keys (0 or absent: no limit); `more` tells whether keys were cut off. */
  readonly limit?: number;
  readonly sortOrder?: SortOrder;
  readonly sortTarget?: SortTarget;
  /** A local, possibly stale read from the member asked (default: linearizable). */
  readonly serializable?: boolean;
  readonly keysOnly?: boolean;
  readonly countOnly?: boolean;
  readonly minModRevision?: bigint;
  readonly maxModRevision?: bigint;
  readonly minCreateRevision?: bigint;
  readonly maxCreateRevision?: bigint;
}

export interface PutOptions {
  /** Attach the key to this lease (0n or absent: none; detaches it from an earlier lease). */
  readonly lease?: bigint;
  /** Return the previous KeyValue, if the key existed. */
  readonly prevKv?: boolean;
  /** Keep the current value (the value given must then be empty). */
  readonly ignoreValue?: boolean;
  /** Keep the current lease. */
  readonly ignoreLease?: boolean;
}

export interface DeleteOptions extends KeyRangeOptions {
  readonly prevKv?: boolean;
}

export type Op =
  | { readonly type: 'range'; readonly key: Buffer; readonly options: RangeOptions }
  | {
      readonly type: 'put';
      readonly key: Buffer;
      readonly value: Buffer;
      readonly options: PutOptions;
    }
  | { readonly type: 'delete'; readonly key: Buffer; readonly options: DeleteOptions }
  | { readonly type: 'txn'; readonly txn: TxnSpec };

export interface TxnSpec {
  readonly compares: readonly Compare[];
  readonly success: readonly Op[];
  readonly failure: readonly Op[];
}

/** Builders for operations, usable in Txn branches. */
export const op = {
  get: (key: Bytes, options: RangeOptions = {}): Op => ({
    type: 'range',
    key: toBuffer(key),
    options,
  }),
  put: (key: Bytes, value: Bytes, options: PutOptions = {}): Op => ({
    type: 'put',
    key: toBuffer(key),
    value: toBuffer(value),
    options,
  }),
  delete: (key: Bytes, options: DeleteOptions = {}): Op => ({
    type: 'delete',
    key: toBuffer(key),
    options,
  }),
  txn: (txn: TxnSpec): Op => ({ type: 'txn', txn }),
};

export type CompareOperator = '=' | '!=' | '>' | '<';
export type CompareTarget = 'version' | 'create' | 'mod' | 'value' | 'lease';

export interface Compare {
  readonly key: Buffer;
  readonly target: CompareTarget;
  readonly operator: CompareOperator;
  /** bigint for every target except 'value', which compares bytes. */
  readonly operand: bigint | Buffer;
  /** Compare every key in [key, rangeEnd) (rpc.proto Compare.range_end: all must satisfy it). */
  readonly rangeEnd?: Buffer;
}

const numeric =
  (target: Exclude<CompareTarget, 'value'>) =>
  (key: Bytes, operator: CompareOperator, operand: bigint, range: KeyRangeOptions = {}): Compare =>
    withRange({ key: toBuffer(key), target, operator, operand }, range);

function withRange(c: Compare, range: KeyRangeOptions): Compare {
  const end = rangeEnd(c.key, range);
  return end.length === 0 ? c : { ...c, rangeEnd: end };
}

/**
 * Builders for compares. A missing key compares as a zero KeyValue, so `createRevision(k, '=', 0n)`
 * means "k does not exist"; a value compare on a missing key is false (etcd's applyCompare).
 */
export const compare = {
  version: numeric('version'),
  createRevision: numeric('create'),
  modRevision: numeric('mod'),
  lease: numeric('lease'),
  value: (key: Bytes, operator: CompareOperator, operand: Bytes, range: KeyRangeOptions = {}) =>
    withRange({ key: toBuffer(key), target: 'value', operator, operand: toBuffer(operand) }, range),
};

const compareResult: Record<CompareOperator, string> = {
  '=': 'EQUAL',
  '!=': 'NOT_EQUAL',
  '>': 'GREATER',
  '<': 'LESS',
};
const compareTarget: Record<CompareTarget, [wire: string, field: string]> = {
  version: ['VERSION', 'version'],
  create: ['CREATE', 'create_revision'],
  mod: ['MOD', 'mod_revision'],
  value: ['VALUE', 'value'],
  lease: ['LEASE', 'lease'],
};

function encodeCompare(c: Compare): WireObject {
  const [target, field] = compareTarget[c.target];
  const operand = typeof c.operand === 'bigint' ? c.operand.toString() : c.operand;
  return {
    result: compareResult[c.operator],
    target,
    key: c.key,
    [field]: operand,
    ...(c.rangeEnd === undefined ? {} : { range_end: c.rangeEnd }),
  };
}

const opt = (v: bigint | undefined): string | undefined => (v === undefined ? undefined : `${v}`);

export function encodeRange(key: Buffer, o: RangeOptions): WireObject {
  return {
    key,
    ...rangeEndField(key, o),
    limit: o.limit ?? 0,
    revision: opt(o.revision) ?? '0',
    sort_order: (o.sortOrder ?? 'none').toUpperCase(),
    sort_target: (o.sortTarget ?? 'key').toUpperCase(),
    serializable: o.serializable ?? false,
    keys_only: o.keysOnly ?? false,
    count_only: o.countOnly ?? false,
    min_mod_revision: opt(o.minModRevision) ?? '0',
    max_mod_revision: opt(o.maxModRevision) ?? '0',
    min_create_revision: opt(o.minCreateRevision) ?? '0',
    max_create_revision: opt(o.maxCreateRevision) ?? '0',
  };
}

export function encodePut(key: Buffer, value: Buffer, o: PutOptions): WireObject {
  return {
    key,
    value,
    lease: opt(o.lease) ?? '0',
    prev_kv: o.prevKv ?? false,
    ignore_value: o.ignoreValue ?? false,
    ignore_lease: o.ignoreLease ?? false,
  };
}

export function encodeDelete(key: Buffer, o: DeleteOptions): WireObject {
  return { key, ...rangeEndField(key, o), prev_kv: o.prevKv ?? false };
}

export function encodeTxn(t: TxnSpec): WireObject {
  return {
    compare: t.compares.map(encodeCompare),
    success: t.success.map(encodeOp),
    failure: t.failure.map(encodeOp),
  };
}

function encodeOp(o: Op): WireObject {
  switch (o.type) {
    case 'range':
      return { request_range: encodeRange(o.key, o.options) };
    case 'put':
      return { request_put: encodePut(o.key, o.value, o.options) };
    case 'delete':
      return { request_delete_range: encodeDelete(o.key, o.options) };
    case 'txn':
      return { request_txn: encodeTxn(o.txn) };
  }
}

/** True if the txn may write (then it is never retried after it may have been sent). */
export function txnWrites(t: TxnSpec): boolean {
  const writes = (o: Op): boolean =>
    o.type === 'put' || o.type === 'delete' || (o.type === 'txn' && txnWrites(o.txn));
  return t.success.some(writes) || t.failure.some(writes);
}

export interface RangeResult {
  readonly header: ResponseHeader;
  readonly kvs: readonly KeyValue[];
  /** Keys were cut off by `limit`. */
  readonly more: boolean;
  /** Total keys in the range at that revision, regardless of `limit`. */
  readonly count: bigint;
}

export interface PutResult {
  readonly header: ResponseHeader;
  readonly prevKv: KeyValue | undefined;
}

export interface DeleteResult {
  readonly header: ResponseHeader;
  readonly deleted: bigint;
  readonly prevKvs: readonly KeyValue[];
}

export interface TxnResult {
  readonly header: ResponseHeader;
  /** All compares held, so `success` ran (else `failure`). */
  readonly succeeded: boolean;
  /** One result per op of the branch that ran, in order. */
  readonly responses: readonly OpResult[];
}

export type OpResult =
  | ({ readonly type: 'range' } & RangeResult)
  | ({ readonly type: 'put' } & PutResult)
  | ({ readonly type: 'delete' } & DeleteResult)
  | ({ readonly type: 'txn' } & TxnResult);

export function decodeRange(w: WireObject): RangeResult {
  return {
    header: decodeHeader(w.header),
    kvs: decodeKeyValues(w.kvs),
    more: w.more === true,
    count: int64(w.count),
  };
}

export function decodePut(w: WireObject): PutResult {
  return { header: decodeHeader(w.header), prevKv: decodeOptionalKeyValue(w.prev_kv) };
}

export function decodeDelete(w: WireObject): DeleteResult {
  return {
    header: decodeHeader(w.header),
    deleted: int64(w.deleted),
    prevKvs: decodeKeyValues(w.prev_kvs),
  };
}

export function decodeTxn(w: WireObject): TxnResult {
  const responses = Array.isArray(w.responses) ? (w.responses as WireObject[]) : [];
  return {
    header: decodeHeader(w.header),
    succeeded: w.succeeded === true,
    responses: responses.map(decodeOpResult),
  };
}

function decodeOpResult(w: WireObject): OpResult {
  if (w.response_range) return { type: 'range', ...decodeRange(w.response_range as WireObject) };
  if (w.response_put) return { type: 'put', ...decodePut(w.response_put as WireObject) };
  if (w.response_delete_range) {
    return { type: 'delete', ...decodeDelete(w.response_delete_range as WireObject) };
  }
  return { type: 'txn', ...decodeTxn((w.response_txn ?? {}) as WireObject) };
}

/** The builder `kv.txn()` returns: `if(...)`, `then(...)`, `else(...)`, then `commit()`. */
export class Txn {
  readonly #connection: Connection;
  readonly #compares: Compare[] = [];
  readonly #success: Op[] = [];
  readonly #failure: Op[] = [];

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  /** Add compares; all must hold for the `then` branch to run (none: it runs). */
  if(...compares: Compare[]): this {
    this.#compares.push(...compares);
    return this;
  }

  then(...ops: Op[]): this {
    this.#success.push(...ops);
    return this;
  }

  else(...ops: Op[]): this {
    this.#failure.push(...ops);
    return this;
  }

  /** The request as data (for nesting with `op.txn`, or logging). */
  spec(): TxnSpec {
    return {
      compares: [...this.#compares],
      success: [...this.#success],
      failure: [...this.#failure],
    };
  }

  /**
   * Send it. A txn with any put or delete is a write: never retried once it may have been sent
   * (UnknownOutcomeError; connection.ts).
   */
  async commit(options: CallOptions = {}): Promise<TxnResult> {
    const spec = this.spec();
    const kind = txnWrites(spec) ? 'write' : 'read';
    const w = await this.#connection.unary<WireObject>('KV.Txn', encodeTxn(spec), kind, options);
    return decodeTxn(w);
  }
}
