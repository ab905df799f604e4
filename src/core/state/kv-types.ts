// The etcd v3 key-space values and requests as plain data (mvccpb and etcdserverpb: etcd's
// api/mvccpb/kv.proto and api/etcdserverpb/rpc.proto). Field names follow the proto's, in
// camelCase; enums are their proto names. Lease IDs are int64 on the wire, so they are bigints
// here; revisions are safe integers.
import type { Revision } from '../base/units.js';

/** A lease ID; 0n means "no lease". */
export type LeaseId = bigint;
export const NO_LEASE: LeaseId = 0n;

export interface KeyValue {
  readonly key: Uint8Array;
  /** Revision of the key's last creation; 0 in a DELETE event. */
  readonly createRevision: Revision;
  /** Revision of the key's last modification (the delete revision in a DELETE event). */
  readonly modRevision: Revision;
  /** 1 at creation, +1 on each put; 0 in a DELETE event. */
  readonly version: number;
  readonly value: Uint8Array;
  readonly lease: LeaseId;
}

export interface WatchEvent {
  readonly type: 'PUT' | 'DELETE';
  readonly kv: KeyValue;
  /** The key's previous version, when it had a live one. */
  readonly prevKv?: KeyValue;
}

export interface ResponseHeader {
  /** The store revision when the request was applied. */
  readonly revision: Revision;
}

export type SortOrder = 'NONE' | 'ASCEND' | 'DESCEND';
export type SortTarget = 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';

export interface RangeRequest {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array;
  /** 0 (default) means no limit. */
  readonly limit?: number;
  /** ≤ 0 (default) reads the newest state. */
  readonly revision?: number;
  readonly sortOrder?: SortOrder;
  readonly sortTarget?: SortTarget;
  readonly keysOnly?: boolean;
  readonly countOnly?: boolean;
  /** Filters: 0 (default) means unbounded. */
  readonly minModRevision?: number;
  readonly maxModRevision?: number;
  readonly minCreateRevision?: number;
  readonly maxCreateRevision?: number;
}

export interface RangeResponse {
  readonly header: ResponseHeader;
  readonly kvs: readonly KeyValue[];
  readonly more: boolean;
  /** Keys in the range at the read revision, before limit and min/max filters. */
  readonly count: number;
}

export interface PutRequest {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  readonly lease?: LeaseId;
  readonly prevKv?: boolean;
  readonly ignoreValue?: boolean;
  readonly ignoreLease?: boolean;
}

export interface PutResponse {
  readonly header: ResponseHeader;
  readonly prevKv?: KeyValue;
}

export interface DeleteRangeRequest {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array;
  readonly prevKv?: boolean;
}

export interface DeleteRangeResponse {
  readonly header: ResponseHeader;
  readonly deleted: number;
  readonly prevKvs: readonly KeyValue[];
}

export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';

/** What a compare looks at, and the operand it compares that field with. */
export type CompareOperand =
  | { readonly target: 'VERSION'; readonly version: number }
  | { readonly target: 'CREATE'; readonly createRevision: number }
  | { readonly target: 'MOD'; readonly modRevision: number }
  | { readonly target: 'VALUE'; readonly value: Uint8Array }
  | { readonly target: 'LEASE'; readonly lease: LeaseId };

/** One txn guard over [key, rangeEnd); the target decides which field is compared. */
export type Compare = {
  readonly result: CompareResult;
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array;
} & CompareOperand;

/** A txn operation; `empty` is a RequestOp with no request set (an error on the wire). */
export type RequestOp =
  | { readonly type: 'range'; readonly request: RangeRequest }
  | { readonly type: 'put'; readonly request: PutRequest }
  | { readonly type: 'deleteRange'; readonly request: DeleteRangeRequest }
  | { readonly type: 'txn'; readonly request: TxnRequest }
  | { readonly type: 'empty' };

export type ResponseOp =
  | { readonly type: 'range'; readonly response: RangeResponse }
  | { readonly type: 'put'; readonly response: PutResponse }
  | { readonly type: 'deleteRange'; readonly response: DeleteRangeResponse }
  | { readonly type: 'txn'; readonly response: TxnResponse };

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly RequestOp[];
  readonly failure: readonly RequestOp[];
}

export interface TxnResponse {
  readonly header: ResponseHeader;
  readonly succeeded: boolean;
  readonly responses: readonly ResponseOp[];
}

export interface CompactionRequest {
  readonly revision: number;
  /** Accepted and ignored: the in-memory store removes data at once. */
  readonly physical?: boolean;
}

export interface CompactionResponse {
  readonly header: ResponseHeader;
}

export interface LeaseGrantResponse {
  readonly header: ResponseHeader;
  readonly id: LeaseId;
  /** The granted TTL (raised to the minimum), in seconds. */
  readonly ttlSeconds: number;
}

export interface LeaseRevokeResponse {
  readonly header: ResponseHeader;
}

export interface LeaseKeepAliveResponse {
  readonly header: ResponseHeader;
  readonly id: LeaseId;
  /** The granted TTL after renewal; 0 for an unknown lease. */
  readonly ttlSeconds: number;
}

export interface LeaseTimeToLiveResponse {
  readonly header: ResponseHeader;
  readonly id: LeaseId;
  /** Remaining whole seconds (truncated, never negative); -1 for an unknown lease. */
  readonly ttlSeconds: number;
  readonly grantedTtlSeconds: number;
  readonly keys: readonly Uint8Array[];
}

export interface LeaseLeasesResponse {
  readonly header: ResponseHeader;
  readonly leases: readonly LeaseId[];
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);
