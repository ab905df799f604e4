// The lock and election queue's requests (src/core/queue/requests.ts) in the key space's own
// types, one op for one op: what the Lock and Election services propose and read. Revisions are
// numbers here and bigint in the queue module; lease IDs are bigint in both.
import type { QueueKv } from '../../core/queue/decisions.js';
import type { QueueCompare, QueueOp, QueueRange, QueueTxn } from '../../core/queue/requests.js';
import { prefixEnd } from '../../core/state/key-range.js';
import type {
  Compare,
  KeyValue,
  RangeRequest,
  RequestOp,
  ResponseOp,
  TxnRequest,
} from '../../core/state/kv-types.js';

export function toRangeRequest(r: QueueRange): RangeRequest {
  return {
    key: r.key,
    ...(r.prefix === true ? { rangeEnd: prefixEnd(r.key) } : {}),
    ...(r.createOrder === undefined
      ? {}
      : { sortTarget: 'CREATE', sortOrder: r.createOrder === 'ascend' ? 'ASCEND' : 'DESCEND' }),
    ...(r.limit === undefined ? {} : { limit: r.limit }),
    ...(r.maxCreateRevision === undefined
      ? {}
      : { maxCreateRevision: Number(r.maxCreateRevision) }),
  };
}

const compareResult = { '=': 'EQUAL', '<': 'LESS', '>': 'GREATER' } as const;

function toCompare(c: QueueCompare): Compare {
  const range = c.prefix === true ? { rangeEnd: prefixEnd(c.key) } : {};
  const result = compareResult[c.operator];
  return c.target === 'create'
    ? { target: 'CREATE', result, key: c.key, ...range, createRevision: Number(c.operand) }
    : { target: 'LEASE', result, key: c.key, ...range, lease: c.operand };
}

function toRequestOp(o: QueueOp): RequestOp {
  switch (o.type) {
    case 'get':
      return { type: 'range', request: toRangeRequest(o.range) };
    case 'put':
      return {
        type: 'put',
        request: {
          key: o.key,
          value: o.value,
          ...(o.lease === undefined ? {} : { lease: o.lease }),
        },
      };
    case 'delete':
      return { type: 'deleteRange', request: { key: o.key } };
  }
}

export function toTxnRequest(t: QueueTxn): TxnRequest {
  return {
    compare: t.compare.map(toCompare),
    success: t.success.map(toRequestOp),
    failure: t.failure.map(toRequestOp),
  };
}

/** A key as the queue's decisions see it, keeping the key space's own for the caller. */
export interface ServerQueueKv extends QueueKv {
  readonly kv: KeyValue;
}

export function queueKv(kv: KeyValue): ServerQueueKv;
export function queueKv(kv: KeyValue | undefined): ServerQueueKv | undefined;
export function queueKv(kv: KeyValue | undefined): ServerQueueKv | undefined {
  if (kv === undefined) return undefined;
  return { key: kv.key, createRevision: BigInt(kv.createRevision), lease: kv.lease, kv };
}

/** The kvs of a txn's range response (an op the recipe itself put there). */
export function rangeResultOf(op: ResponseOp | undefined): readonly KeyValue[] {
  if (op?.type !== 'range') throw new Error('lock: txn response without its range');
  return op.response.kvs;
}
