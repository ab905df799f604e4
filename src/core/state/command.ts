// The commands of the etcd key space as they travel through the Raft log (data, not objects, keyed
// on `type`). Encoded with tagged JSON (tagged-json.ts): one JSON object per entry, e.g.
// {"type":"put","request":{"key":{"$b":"666f6f"},"value":{"$b":"31"}}} — except a put, the command
// of nearly every entry, which has a binary form (put-codec.ts): a third of the bytes in the log,
// the WAL and memory, and no JSON work on the three members that apply it.
//
// Time enters only here: a command that sets a lease deadline carries the leader's monotonic
// clock reading `nowMs`, so every replica records the same deadline.
import type { AuthOp } from './auth-ops.js';
import type { AuthAs } from './auth-store.js';
import type {
  CompactionRequest,
  DeleteRangeRequest,
  LeaseId,
  PutRequest,
  TxnRequest,
} from './kv-types.js';
import { decodePut, encodePut, PUT_FORMAT } from './put-codec.js';
import { decodeTagged, encodeTagged } from './tagged-json.js';

// `as`: who a client's request runs as, stamped by the API layer while auth is enabled and
// checked at apply (etcd's RequestHeader username and auth_revision).
export type Command =
  | { readonly type: 'put'; readonly request: PutRequest; readonly as?: AuthAs }
  | { readonly type: 'deleteRange'; readonly request: DeleteRangeRequest; readonly as?: AuthAs }
  | { readonly type: 'txn'; readonly request: TxnRequest; readonly as?: AuthAs }
  | { readonly type: 'compact'; readonly request: CompactionRequest; readonly as?: AuthAs }
  /** `id` 0n lets the machine choose one. */
  | {
      readonly type: 'leaseGrant';
      readonly id: LeaseId;
      readonly ttlSeconds: number;
      readonly nowMs: number;
    }
  /**
   * Proposed by a client, or by the leader when its clock says the lease expired; then
   * `ifExpiredAtMs` is that clock reading, and the revoke is skipped if a renewal applied
   * before it moved the deadline past it.
   */
  | {
      readonly type: 'leaseRevoke';
      readonly id: LeaseId;
      readonly ifExpiredAtMs?: number;
      readonly as?: AuthAs;
    }
  | { readonly type: 'leaseKeepAlive'; readonly id: LeaseId; readonly nowMs: number }
  /** The leader's periodic record of remaining TTLs, used by the next leader's refresh. */
  | {
      readonly type: 'leaseCheckpoint';
      readonly checkpoints: readonly {
        readonly id: LeaseId;
        readonly remainingTtlSeconds: number;
      }[];
    }
  /** A new leader's first act: every lease's deadline becomes now + extra + its TTL. */
  | { readonly type: 'leaseRefreshAll'; readonly nowMs: number; readonly extraMs: number }
  /** An Auth service request (auth-ops.ts). */
  | { readonly type: 'auth'; readonly op: AuthOp; readonly as?: AuthAs }
  /**
   * etcd's InternalAuthenticateRequest: the password was checked by the member that took the
   * call, at auth revision `checkedRevision`; every member registers `tokenPrefix.<index>`. The
   * password itself never enters the log.
   */
  | {
      readonly type: 'authenticate';
      readonly name: string;
      readonly tokenPrefix: string;
      readonly checkedRevision: number;
    };

export type CommandType = Command['type'];

const COMMAND_TYPES: readonly string[] = [
  'put',
  'deleteRange',
  'txn',
  'compact',
  'leaseGrant',
  'leaseRevoke',
  'leaseKeepAlive',
  'leaseCheckpoint',
  'leaseRefreshAll',
  'auth',
  'authenticate',
] satisfies CommandType[];

export function encodeCommand(c: Command): Uint8Array {
  // The binary form has no room for `as`; a put made while auth is on goes as tagged JSON.
  return c.type === 'put' && c.as === undefined ? encodePut(c.request) : encodeTagged(c);
}

/**
 * Decode a log entry; null when it is not a command (bad JSON or unknown type). Field shapes are
 * trusted: only the leader's own encoder writes entries.
 */
export function decodeCommand(data: Uint8Array): Command | null {
  if (data[0] === PUT_FORMAT) {
    const request = decodePut(data);
    return request === null ? null : { type: 'put', request };
  }
  let v: unknown;
  try {
    v = decodeTagged(data);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const type = (v as { type?: unknown }).type;
  return typeof type === 'string' && COMMAND_TYPES.includes(type) ? (v as Command) : null;
}
