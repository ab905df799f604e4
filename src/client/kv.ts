// The KV service: Range, Put, DeleteRange, Txn, Compact (etcd's api/etcdserverpb/rpc.proto).
import type { CallOptions } from './call-options.js';
import { decodeHeader, toBuffer, type Bytes, type KeyValue, type ResponseHeader } from './codec.js';
import type { Connection } from './connection.js';
import {
  Txn,
  decodeDelete,
  decodePut,
  decodeRange,
  encodeDelete,
  encodePut,
  encodeRange,
  type DeleteOptions,
  type DeleteResult,
  type PutOptions,
  type PutResult,
  type RangeOptions,
  type RangeResult,
} from './txn.js';
import type { WireObject } from './codec.js';

export class KV {
  readonly #connection: Connection;

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  /** Range: the keys selected by `options` (a read; retried across endpoints). */
  async range(key: Bytes, options: RangeOptions & CallOptions = {}): Promise<RangeResult> {
    const req = encodeRange(toBuffer(key), options);
    return decodeRange(await this.#connection.unary<WireObject>('KV.Range', req, 'read', options));
  }

  /** The single key `key`, or undefined. */
  async get(
    key: Bytes,
    options: Omit<RangeOptions, 'prefix' | 'rangeEnd' | 'fromKey'> & CallOptions = {},
  ): Promise<KeyValue | undefined> {
    return (await this.range(key, options)).kvs[0];
  }

  /** Put (a write; see connection.ts for what happens when its outcome is unknown). */
  async put(key: Bytes, value: Bytes, options: PutOptions & CallOptions = {}): Promise<PutResult> {
    const req = encodePut(toBuffer(key), toBuffer(value), options);
    return decodePut(await this.#connection.unary<WireObject>('KV.Put', req, 'write', options));
  }

  /** DeleteRange (a write). */
  async delete(key: Bytes, options: DeleteOptions & CallOptions = {}): Promise<DeleteResult> {
    const req = encodeDelete(toBuffer(key), options);
    const w = await this.#connection.unary<WireObject>('KV.DeleteRange', req, 'write', options);
    return decodeDelete(w);
  }

  /** A transaction builder; see txn.ts. */
  txn(): Txn {
    return new Txn(this.#connection);
  }

  /** Compact the history up to `revision` (a write; CompactedError if already compacted). */
  async compact(
    revision: bigint,
    options: { readonly physical?: boolean } & CallOptions = {},
  ): Promise<ResponseHeader> {
    const req = { revision: `${revision}`, physical: options.physical ?? false };
    const w = await this.#connection.unary<WireObject>('KV.Compact', req, 'write', options);
    return decodeHeader(w.header);
  }
}
