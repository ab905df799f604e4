// The lock and election queue's requests (src/core/queue/requests.ts) in the SDK's own Txn
// builder and range options, one op for one op: what Lock and Election send, to tenure and to
// etcd alike.
import type { QueueCompare, QueueOp, QueueRange, QueueTxn } from '../core/queue/requests.js';
import type { Client } from './client.js';
import { compare, op, type Compare, type Op, type RangeOptions, type Txn } from './txn.js';

export function rangeOptions(r: QueueRange): RangeOptions {
  return {
    ...(r.prefix === true ? { prefix: true } : {}),
    ...(r.createOrder === undefined ? {} : { sortTarget: 'create', sortOrder: r.createOrder }),
    ...(r.limit === undefined ? {} : { limit: r.limit }),
    ...(r.maxCreateRevision === undefined ? {} : { maxCreateRevision: r.maxCreateRevision }),
  };
}

function toCompare(c: QueueCompare): Compare {
  const of = c.target === 'create' ? compare.createRevision : compare.lease;
  return of(c.key, c.operator, c.operand, c.prefix === true ? { prefix: true } : {});
}

function toOp(o: QueueOp): Op {
  switch (o.type) {
    case 'get':
      return op.get(o.range.key, rangeOptions(o.range));
    case 'put':
      return op.put(o.key, o.value, o.lease === undefined ? {} : { lease: o.lease });
    case 'delete':
      return op.delete(o.key);
  }
}

/** The Txn, ready to commit. */
export function txnOf(client: Client, t: QueueTxn): Txn {
  return client.kv
    .txn()
    .if(...t.compare.map(toCompare))
    .then(...t.success.map(toOp))
    .else(...t.failure.map(toOp));
}
