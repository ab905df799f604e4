// The workload's register operations as etcd v3 requests on the wire (the proto objects a gRPC
// client sends: bytes as Buffer, 64-bit integers as decimal strings, enums by name), and etcd's
// answers as the checker's outputs. Each checked key is one register of the checker's model
// (src/check/kv-model.ts): get is a Range of the key, put a Put or a one-op Txn, delete a
// DeleteRange or a one-op Txn, and compare-and-set a Txn that puts only if a compare holds: the
// key's value, its mod revision, or its absence (create revision 0).
//
// A mod-revision compare stands for a value compare because every write of the workload writes a
// value never written before, so a key holds value v exactly when its last change is the write
// of v. etcd has no append, so the workload issues none.
import { unreachable } from '../core/base/assert.js';
import type { KvInput, KvOutput } from '../check/history.js';

export const KV = {
  range: '/etcdserverpb.KV/Range',
  put: '/etcdserverpb.KV/Put',
  deleteRange: '/etcdserverpb.KV/DeleteRange',
  txn: '/etcdserverpb.KV/Txn',
  compact: '/etcdserverpb.KV/Compact',
} as const;

/** A request ready to send: the method and its proto object. */
export interface WireRequest {
  readonly path: string;
  readonly request: object;
  /** A write (goes through the log) or a read (may be sent again anywhere). */
  readonly write: boolean;
}

/** How a register write goes on the wire; the checker sees the same operation either way. */
export interface WriteForm {
  /** Send a put or delete as a Txn with no compare and that one op. */
  readonly asTxn: boolean;
  /**
   * For a compare-and-set on a present value: the mod revision that wrote it, to compare that
   * instead of the value; undefined compares the value.
   */
  readonly expectedModRevision: number | undefined;
}

export function bytes(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

export function text(b: unknown): string {
  return Buffer.isBuffer(b) ? b.toString('utf8') : '';
}

export function requestFor(input: KvInput, form: WriteForm): WireRequest {
  const key = bytes(input.key);
  const txn = (compare: object[], op: object): WireRequest => ({
    path: KV.txn,
    request: { compare, success: [op], failure: [] },
    write: true,
  });
  switch (input.type) {
    case 'get':
      return { path: KV.range, request: { key }, write: false };
    case 'put': {
      const put = { key, value: bytes(input.value) };
      return form.asTxn
        ? txn([], { request_put: put })
        : { path: KV.put, request: put, write: true };
    }
    case 'delete':
      return form.asTxn
        ? txn([], { request_delete_range: { key } })
        : { path: KV.deleteRange, request: { key }, write: true };
    case 'cas': {
      const compare =
        input.expected === null
          ? { result: 'EQUAL', target: 'CREATE', key, create_revision: '0' }
          : form.expectedModRevision !== undefined
            ? {
                result: 'EQUAL',
                target: 'MOD',
                key,
                mod_revision: String(form.expectedModRevision),
              }
            : { result: 'EQUAL', target: 'VALUE', key, value: bytes(input.expected) };
      return txn([compare], { request_put: { key, value: bytes(input.value) } });
    }
    case 'append':
      throw new Error('kv-requests: etcd has no append');
    default:
      return unreachable(input, 'kv input');
  }
}

interface WireKv {
  readonly value?: unknown;
  readonly mod_revision?: unknown;
}

/** The first kv of a Range response, if any. */
export function firstKv(response: Record<string, unknown>): WireKv | undefined {
  const kvs = response['kvs'];
  return Array.isArray(kvs) ? (kvs[0] as WireKv | undefined) : undefined;
}

/** The checker's output for `input` from etcd's answer. */
export function outputOf(input: KvInput, response: Record<string, unknown>): KvOutput {
  switch (input.type) {
    case 'get': {
      const kv = firstKv(response);
      return { type: 'get', value: kv === undefined ? null : text(kv.value) };
    }
    case 'put':
      return { type: 'put' };
    case 'delete':
      return { type: 'delete' };
    case 'cas':
      return { type: 'cas', ok: response['succeeded'] === true };
    case 'append':
      throw new Error('kv-requests: etcd has no append');
    default:
      return unreachable(input, 'kv input');
  }
}

/** The store revision an answer reports (a write's own revision when it wrote). */
export function revisionOf(response: Record<string, unknown>): number {
  const header = response['header'] as { revision?: unknown } | undefined;
  return Number(header?.revision ?? 0);
}
