// Between the SDK's public shapes (bigint revisions and lease IDs, Buffers, camelCase) and the wire
// objects of proto-loader (int64 as decimal strings, enums by name, snake_case proto field names;
// etcd's api/etcdserverpb/rpc.proto and api/mvccpb/kv.proto give the fields and their meaning).
import { InvalidArgumentError } from './errors.js';

/** Keys and values: a string is encoded as UTF-8. */
export type Bytes = string | Uint8Array;

export interface ResponseHeader {
  readonly clusterId: bigint;
  readonly memberId: bigint;
  /** The store revision when the request was applied (0n for calls that do not touch the KV). */
  readonly revision: bigint;
  readonly raftTerm: bigint;
}

export interface KeyValue {
  readonly key: Buffer;
  readonly value: Buffer;
  /** Revision of the key's last creation: the fencing token of lock and election keys. */
  readonly createRevision: bigint;
  readonly modRevision: bigint;
  /** 1 at creation, +1 per put; a deleted key has none. */
  readonly version: bigint;
  /** The attached lease ID, 0n for none. */
  readonly lease: bigint;
}

/** Which keys a Range, DeleteRange, Watch or Compare covers; at most one of the three fields. */
export interface KeyRangeOptions {
  /** Every key that starts with `key` (etcd's getPrefix rule, client/v3/op.go). */
  readonly prefix?: boolean;
  /** The half-open range [key, rangeEnd). */
  readonly rangeEnd?: Bytes;
  /** Every key ≥ key. */
  readonly fromKey?: boolean;
}

export type WireObject = Record<string, unknown>;

export function toBuffer(b: Bytes): Buffer {
  return typeof b === 'string' ? Buffer.from(b, 'utf8') : Buffer.from(b);
}

/** etcd's getPrefix: increment the last byte < 0xff and cut after it; all 0xff → "\0". */
export function prefixEnd(key: Buffer): Buffer {
  const end = Buffer.from(key);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** The wire `range_end` for the options (empty: the single key). */
export function rangeEnd(key: Buffer, o: KeyRangeOptions): Buffer {
  const chosen = [o.prefix === true, o.rangeEnd !== undefined, o.fromKey === true].filter(Boolean);
  if (chosen.length > 1) {
    throw new InvalidArgumentError(
      'INVALID_ARGUMENT',
      'tenure/client: give at most one of prefix, rangeEnd and fromKey',
    );
  }
  if (o.prefix === true) return prefixEnd(key);
  if (o.fromKey === true) return Buffer.from([0]);
  if (o.rangeEnd !== undefined) return toBuffer(o.rangeEnd);
  return Buffer.alloc(0);
}

/**
 * `{ range_end }` only when non-empty. An empty bytes field that is *present* on the wire is
 * decoded by etcd 3.4 (gogoproto) as a non-nil empty slice, which its MVCC layer treats as "every
 * key ≥ key" — so a single-key request must leave the field out entirely.
 */
export function rangeEndField(key: Buffer, o: KeyRangeOptions): { range_end?: Buffer } {
  const end = rangeEnd(key, o);
  return end.length === 0 ? {} : { range_end: end };
}

export function int64(v: unknown): bigint {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint') return BigInt(v);
  return 0n;
}

function buf(v: unknown): Buffer {
  return Buffer.isBuffer(v) ? v : v instanceof Uint8Array ? Buffer.from(v) : Buffer.alloc(0);
}

export function decodeHeader(w: unknown): ResponseHeader {
  const h = (w ?? {}) as WireObject;
  return {
    clusterId: int64(h.cluster_id),
    memberId: int64(h.member_id),
    revision: int64(h.revision),
    raftTerm: int64(h.raft_term),
  };
}

export function decodeKeyValue(w: unknown): KeyValue {
  const kv = (w ?? {}) as WireObject;
  return {
    key: buf(kv.key),
    value: buf(kv.value),
    createRevision: int64(kv.create_revision),
    modRevision: int64(kv.mod_revision),
    version: int64(kv.version),
    lease: int64(kv.lease),
  };
}

/** A KeyValue the server sent, or undefined when it sent none (proto3 leaves it null). */
export function decodeOptionalKeyValue(w: unknown): KeyValue | undefined {
  return w === null || w === undefined ? undefined : decodeKeyValue(w);
}

export function decodeKeyValues(w: unknown): KeyValue[] {
  return Array.isArray(w) ? w.map(decodeKeyValue) : [];
}
