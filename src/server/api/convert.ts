// Conversions between proto-loader objects (proto/README.md options: keepCase, longs as decimal
// strings, enums by name, bytes as Buffer) and the core's plain data (kv-types.ts), plus the
// handler types every service module implements. The Election and Lock services import these,
// so the names here are a contract inside the API layer.
import type {
  Compare,
  CompareResult,
  CompactionRequest,
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  SortOrder,
  SortTarget,
  TxnRequest,
  TxnResponse,
  WatchEvent,
} from '../../core/state/kv-types.js';
import { ERR_INVALID_SORT_OPTION } from '../../core/state/etcd-errors.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ConnectionState } from './connection-limits.js';
import { ApiError } from './status.js';
import type { WireObject } from './wire-read.js';
import {
  asMessage,
  bigintField,
  boolField,
  bytesField,
  enumField,
  numberField,
  optionalBytesField,
  repeatedField,
} from './wire-read.js';

export type { ApiStatus, StatusCode } from './status.js';
export { ApiError, grpcStatusOf, isApiStatus, statusOf, unimplemented } from './status.js';
export * from './wire-read.js';

// ---------------------------------------------------------------------------------------------
// Handler types

/** What a handler knows of its call. */
export interface CallInfo {
  /** Aborts when the client cancels, the deadline passes or the server shuts down. */
  readonly signal: AbortSignal;
  /** Request metadata, keys lower-case; the last value wins for repeated keys. */
  readonly metadata: ReadonlyMap<string, string>;
  /**
   * The Subject CN of the client's verified TLS certificate, when the server runs with
   * `--client-cert-auth` (etcd's AuthInfoFromTLS); never set for calls through the gateway.
   */
  readonly commonName?: string;
  /**
   * The client connection the call came on, whose per-connection limits it counts against
   * (connection-limits.ts); absent for calls made inside the member.
   */
  readonly connection?: ConnectionState;
}

/**
 * A unary method: the request as proto-loader decodes it (narrow it with wire-read.ts), the
 * response as an object proto-loader can encode. Expected failures reject with an EtcdError or
 * ApiStatus value; anything else is logged and sent as Internal.
 */
export type UnaryHandler = (req: unknown, call: CallInfo) => Promise<object>;

/**
 * A server-streaming method: `send` each response; resolve to end the stream with OK. `send`
 * resolves when the transport can take more: a handler that can send without end (Observe)
 * waits for it, so a client that does not read holds one stream's worth of answers at most.
 */
export type ServerStreamHandler = (
  req: unknown,
  call: CallInfo,
  send: (resp: object) => Promise<void>,
) => Promise<void>;

/** A service's methods, keyed by full gRPC path, e.g. '/v3lockpb.Lock/Lock'. */
export interface ServiceHandlers {
  readonly unary: Readonly<Record<string, UnaryHandler>>;
  readonly serverStream: Readonly<Record<string, ServerStreamHandler>>;
}

/** One bidirectional stream (Watch, LeaseKeepAlive), over gRPC or the gateway. */
export interface BidiCall {
  readonly info: CallInfo;
  /** Requests in arrival order; ends when the client half-closes or the call is aborted. */
  readonly requests: AsyncIterable<unknown>;
  /** Send one response; resolves when the transport can take more (backpressure). */
  send(resp: object): Promise<void>;
}

/** A bidi method: resolve to end the stream with OK; reject with a status to end it so. */
export type BidiHandler = (call: BidiCall) => Promise<void>;

/** Handlers of the services this layer implements itself, which include bidi streams. */
export interface ApiService extends ServiceHandlers {
  readonly bidi: Readonly<Record<string, BidiHandler>>;
}

// ---------------------------------------------------------------------------------------------
// Outgoing values: 64-bit integers as decimal strings, bytes as Buffer

/** The identity fields of a response header. */
export type HeaderSource = Pick<KvBackend, 'clusterId' | 'memberId' | 'raftTerm'>;

export interface ProtoHeader {
  readonly cluster_id: string;
  readonly member_id: string;
  readonly revision: string;
  readonly raft_term: string;
}

/** etcdserverpb.ResponseHeader (rpc.proto); revision 0 for calls that do not touch the KV. */
export function toProtoHeader(backend: HeaderSource, revision: number): ProtoHeader {
  return {
    cluster_id: backend.clusterId.toString(),
    member_id: backend.memberId.toString(),
    revision: String(revision),
    raft_term: String(backend.raftTerm()),
  };
}

/** A Buffer over the same memory (no copy): what proto-loader's encoder expects for bytes. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export interface ProtoKeyValue {
  readonly key: Buffer;
  readonly create_revision: string;
  readonly mod_revision: string;
  readonly version: string;
  readonly value: Buffer;
  readonly lease: string;
}

/** mvccpb.KeyValue (etcd api/mvccpb/kv.proto). */
export function toProtoKeyValue(kv: KeyValue): ProtoKeyValue {
  return {
    key: toBuffer(kv.key),
    create_revision: String(kv.createRevision),
    mod_revision: String(kv.modRevision),
    version: String(kv.version),
    value: toBuffer(kv.value),
    lease: kv.lease.toString(),
  };
}

/** mvccpb.Event; prev_kv only when the hub kept it (the watcher asked for it). */
export function toProtoEvent(e: WatchEvent): object {
  return {
    type: e.type,
    kv: toProtoKeyValue(e.kv),
    ...(e.prevKv === undefined ? {} : { prev_kv: toProtoKeyValue(e.prevKv) }),
  };
}

export function toProtoRangeResponse(backend: HeaderSource, r: RangeResponse): object {
  return {
    header: toProtoHeader(backend, r.header.revision),
    kvs: r.kvs.map(toProtoKeyValue),
    more: r.more,
    count: String(r.count),
  };
}

export function toProtoPutResponse(backend: HeaderSource, r: PutResponse): object {
  return {
    header: toProtoHeader(backend, r.header.revision),
    ...(r.prevKv === undefined ? {} : { prev_kv: toProtoKeyValue(r.prevKv) }),
  };
}

export function toProtoDeleteRangeResponse(backend: HeaderSource, r: DeleteRangeResponse): object {
  return {
    header: toProtoHeader(backend, r.header.revision),
    deleted: String(r.deleted),
    prev_kvs: r.prevKvs.map(toProtoKeyValue),
  };
}

/**
 * A Txn's sub-responses carry only the revision in their headers, as etcd 3.4's do (`etcdctl
 * txn -w json` against etcd 3.4 shows no cluster_id, member_id or raft_term in them, and the
 * differential recording compares them): the member's identity and term are the Txn's own.
 */
const SUB_RESPONSE_IDENTITY: HeaderSource = {
  clusterId: 0n,
  memberId: 0n,
  raftTerm: () => 0,
};

function toProtoResponseOp(op: ResponseOp): object {
  const backend = SUB_RESPONSE_IDENTITY;
  switch (op.type) {
    case 'range':
      return { response_range: toProtoRangeResponse(backend, op.response) };
    case 'put':
      return { response_put: toProtoPutResponse(backend, op.response) };
    case 'deleteRange':
      return { response_delete_range: toProtoDeleteRangeResponse(backend, op.response) };
    case 'txn':
      return { response_txn: toProtoTxnResponse(backend, op.response) };
  }
}

export function toProtoTxnResponse(backend: HeaderSource, r: TxnResponse): object {
  return {
    header: toProtoHeader(backend, r.header.revision),
    succeeded: r.succeeded,
    responses: r.responses.map(toProtoResponseOp),
  };
}

// ---------------------------------------------------------------------------------------------
// Incoming requests

const SORT_ORDERS: ReadonlySet<string> = new Set<SortOrder>(['NONE', 'ASCEND', 'DESCEND']);
const SORT_TARGETS: ReadonlySet<string> = new Set<SortTarget>([
  'KEY',
  'VERSION',
  'CREATE',
  'MOD',
  'VALUE',
]);

/**
 * etcdserverpb.RangeRequest (rpc.proto); unknown sort enums → ErrGRPCInvalidSortOption, as
 * etcd's `checkRangeRequest` (server/etcdserver/api/v3rpc/key.go) answers.
 */
export function fromProtoRangeRequest(req: unknown): RangeRequest {
  const m = asMessage(req);
  const sortOrder = enumField(m, 'sort_order', 'NONE');
  const sortTarget = enumField(m, 'sort_target', 'KEY');
  if (!SORT_ORDERS.has(sortOrder) || !SORT_TARGETS.has(sortTarget)) {
    throw new ApiError(ERR_INVALID_SORT_OPTION);
  }
  const rangeEnd = optionalBytesField(m, 'range_end');
  return {
    key: bytesField(m, 'key'),
    ...(rangeEnd === undefined ? {} : { rangeEnd }),
    limit: numberField(m, 'limit'),
    revision: numberField(m, 'revision'),
    sortOrder: sortOrder as SortOrder,
    sortTarget: sortTarget as SortTarget,
    keysOnly: boolField(m, 'keys_only'),
    countOnly: boolField(m, 'count_only'),
    minModRevision: numberField(m, 'min_mod_revision'),
    maxModRevision: numberField(m, 'max_mod_revision'),
    minCreateRevision: numberField(m, 'min_create_revision'),
    maxCreateRevision: numberField(m, 'max_create_revision'),
  };
}

/** Whether a Range asked for a serializable (local, possibly stale) read. */
export function isSerializableRange(req: unknown): boolean {
  return boolField(asMessage(req), 'serializable');
}

/**
 * etcd's isTxnSerializable: every op of both branches is a Range asking for a serializable read
 * (so a txn of compares only is too). Such a read-only txn skips the read barrier.
 */
export function isSerializableTxn(req: unknown): boolean {
  const m = asMessage(req);
  return [...repeatedField(m, 'success'), ...repeatedField(m, 'failure')].every((x) => {
    const op = asMessage(x, 'request op');
    return op['request_range'] != null && isSerializableRange(op['request_range']);
  });
}

export function fromProtoPutRequest(req: unknown): PutRequest {
  const m = asMessage(req);
  return {
    key: bytesField(m, 'key'),
    value: bytesField(m, 'value'),
    lease: bigintField(m, 'lease'),
    prevKv: boolField(m, 'prev_kv'),
    ignoreValue: boolField(m, 'ignore_value'),
    ignoreLease: boolField(m, 'ignore_lease'),
  };
}

export function fromProtoDeleteRangeRequest(req: unknown): DeleteRangeRequest {
  const m = asMessage(req);
  const rangeEnd = optionalBytesField(m, 'range_end');
  return {
    key: bytesField(m, 'key'),
    ...(rangeEnd === undefined ? {} : { rangeEnd }),
    prevKv: boolField(m, 'prev_kv'),
  };
}

export function fromProtoCompactionRequest(req: unknown): CompactionRequest {
  const m = asMessage(req);
  return { revision: numberField(m, 'revision'), physical: boolField(m, 'physical') };
}

const COMPARE_RESULTS: ReadonlySet<string> = new Set<CompareResult>([
  'EQUAL',
  'GREATER',
  'LESS',
  'NOT_EQUAL',
]);

/** An enum value etcd's proto does not declare: no etcd client can send one. */
function badEnum(name: string, value: string): never {
  throw new ApiError({ code: 'InvalidArgument', message: `tenure: unknown ${name} ${value}` });
}

/**
 * etcdserverpb.Compare (rpc.proto). The operand is read from the target_union member the
 * target names, as etcd does; an unset member compares as zero (or empty bytes).
 */
function fromProtoCompare(x: unknown): Compare {
  const m = asMessage(x, 'compare');
  const result = enumField(m, 'result', 'EQUAL');
  if (!COMPARE_RESULTS.has(result)) badEnum('compare result', result);
  const rangeEnd = optionalBytesField(m, 'range_end');
  const base = {
    result: result as CompareResult,
    key: bytesField(m, 'key'),
    ...(rangeEnd === undefined ? {} : { rangeEnd }),
  };
  const target = enumField(m, 'target', 'VERSION');
  switch (target) {
    case 'VERSION':
      return { ...base, target, version: numberField(m, 'version') };
    case 'CREATE':
      return { ...base, target, createRevision: numberField(m, 'create_revision') };
    case 'MOD':
      return { ...base, target, modRevision: numberField(m, 'mod_revision') };
    case 'VALUE':
      return { ...base, target, value: bytesField(m, 'value') };
    case 'LEASE':
      return { ...base, target, lease: bigintField(m, 'lease') };
    default:
      return badEnum('compare target', target);
  }
}

/** A RequestOp: the oneof `request` names the member; none set is the core's `empty` op. */
function fromProtoRequestOp(x: unknown): RequestOp {
  const m = asMessage(x, 'request op');
  if (m['request_range'] != null) {
    return { type: 'range', request: fromProtoRangeRequest(m['request_range']) };
  }
  if (m['request_put'] != null) {
    return { type: 'put', request: fromProtoPutRequest(m['request_put']) };
  }
  if (m['request_delete_range'] != null) {
    return { type: 'deleteRange', request: fromProtoDeleteRangeRequest(m['request_delete_range']) };
  }
  if (m['request_txn'] != null) {
    return { type: 'txn', request: fromProtoTxnRequest(m['request_txn']) };
  }
  return { type: 'empty' };
}

export function fromProtoTxnRequest(req: unknown): TxnRequest {
  const m: WireObject = asMessage(req);
  return {
    compare: repeatedField(m, 'compare').map(fromProtoCompare),
    success: repeatedField(m, 'success').map(fromProtoRequestOp),
    failure: repeatedField(m, 'failure').map(fromProtoRequestOp),
  };
}
