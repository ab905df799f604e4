// The commands of the etcd key space as they travel through the Raft log (data, not objects, keyed
// on `type`). Encoded with tagged JSON (tagged-json.ts): one JSON object per entry, e.g.
// {"type":"put","request":{"key":{"$b":"666f6f"},"value":{"$b":"31"}}} — except a put, the command
// of nearly every entry, which has a binary form (put-codec.ts): a third of the bytes in the log,
// the WAL and memory, and no JSON work on the three members that apply it.
//
// Time enters only here: a command that sets a lease deadline carries the leader's monotonic
// clock reading `nowMs`, so every replica records the same deadline.
import type { AlarmMember } from './alarms.js';
import { isAlarmMember } from './alarms.js';
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
import {
  fields,
  isBigint,
  isBool,
  isBytes,
  isFinite,
  isInt,
  isObject,
  isPermission,
  isString,
  oneOf,
  opt,
  orNull,
  type Check,
} from './shapes.js';
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
  /**
   * The leader's periodic record of remaining TTLs (etcd's LeaseCheckpoint), used by the next
   * leader's refresh; `remainingTtlSeconds` is fractional (ms / 1000), and null resets a lease's
   * checkpoint: the leader commits that before it answers a renewal of a checkpointed lease.
   */
  | {
      readonly type: 'leaseCheckpoint';
      readonly checkpoints: readonly {
        readonly id: LeaseId;
        readonly remainingTtlSeconds: number | null;
      }[];
    }
  /**
   * A new leader's first act: every lease's deadline becomes now + extra + its TTL, or now + its
   * checkpointed remainder stretched for clock rates (lease-table.ts, refreshedLifeMs).
   */
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
    }
  /**
   * etcd's InternalRaftRequest Alarm (ACTIVATE or DEACTIVATE; a GET is answered from the
   * applied state): a client's, or the leader's when its corruption check finds a member whose
   * key space differs (alarms.ts).
   */
  | {
      readonly type: 'alarm';
      readonly action: 'ACTIVATE' | 'DEACTIVATE';
      readonly member: AlarmMember;
    };

export type CommandType = Command['type'];

export function encodeCommand(c: Command): Uint8Array {
  // The binary form has no room for `as`; a put made while auth is on goes as tagged JSON.
  return c.type === 'put' && c.as === undefined ? encodePut(c.request) : encodeTagged(c);
}

/**
 * Decode a log entry or a forwarded command; null when it is not a command: bad JSON, an unknown
 * type, or fields of the wrong shape (isCommand). The shape is checked although only the leader
 * writes entries, because what the leader writes includes commands other members forwarded to
 * it (forward-frame.ts): one of the wrong shape, from a broken or hostile peer, would otherwise
 * throw inside every member's apply, and again at every restart, as the log replays.
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
    // Malformed JSON or tags, or nesting deep enough to exhaust the stack (RangeError).
    return null;
  }
  return isCommand(v) ? v : null;
}

/**
 * Deepest txn nesting a command may have. etcd's --max-txn-ops budget (128) already refuses
 * deeper nesting in apply (validateTxn: each level spends at least one op of its parent's);
 * this bound keeps the shape check itself from recursing without end.
 */
export const TXN_NESTING_MAX = 130;

const PUT_FIELDS = {
  key: isBytes,
  value: isBytes,
  lease: opt(isBigint),
  prevKv: opt(isBool),
  ignoreValue: opt(isBool),
  ignoreLease: opt(isBool),
};
const DELETE_FIELDS = { key: isBytes, rangeEnd: opt(isBytes), prevKv: opt(isBool) };
const RANGE_FIELDS = {
  key: isBytes,
  rangeEnd: opt(isBytes),
  limit: opt(isInt),
  revision: opt(isInt),
  // Any string: an unknown sort option is the machine's to refuse, with etcd's error.
  sortOrder: opt(isString),
  sortTarget: opt(isString),
  keysOnly: opt(isBool),
  countOnly: opt(isBool),
  minModRevision: opt(isInt),
  maxModRevision: opt(isInt),
  minCreateRevision: opt(isInt),
  maxCreateRevision: opt(isInt),
};
const COMPARE_OPERANDS: Readonly<Record<string, readonly [string, (v: unknown) => boolean]>> = {
  VERSION: ['version', isInt],
  CREATE: ['createRevision', isInt],
  MOD: ['modRevision', isInt],
  VALUE: ['value', isBytes],
  LEASE: ['lease', isBigint],
};

function isCompare(v: unknown): boolean {
  if (!fields(v, { result: oneOf('EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'), key: isBytes }))
    return false;
  const c = v;
  const target = c.target;
  const operand =
    typeof target === 'string' && Object.hasOwn(COMPARE_OPERANDS, target)
      ? COMPARE_OPERANDS[target]
      : undefined;
  return operand !== undefined && operand[1](c[operand[0]]) && opt(isBytes)(c.rangeEnd);
}

function isRequestOp(v: unknown, depth: number): boolean {
  if (!isObject(v)) return false;
  switch (v.type) {
    case 'range':
      return fields(v.request, RANGE_FIELDS);
    case 'put':
      return fields(v.request, PUT_FIELDS);
    case 'deleteRange':
      return fields(v.request, DELETE_FIELDS);
    case 'txn':
      return isTxn(v.request, depth + 1);
    case 'empty':
      return true;
    default:
      return false;
  }
}

function isTxn(v: unknown, depth: number): boolean {
  if (depth > TXN_NESTING_MAX || !isObject(v)) return false;
  const { compare, success, failure } = v;
  return (
    Array.isArray(compare) &&
    Array.isArray(success) &&
    Array.isArray(failure) &&
    compare.every(isCompare) &&
    success.every((op) => isRequestOp(op, depth)) &&
    failure.every((op) => isRequestOp(op, depth))
  );
}

const isCheckpoint = (v: unknown): boolean =>
  fields(v, { id: isBigint, remainingTtlSeconds: orNull(isFinite) });

const isAs = opt((v: unknown) =>
  fields(v, { user: isString, revision: isInt, server: opt((x: unknown) => x === true) }),
);

const isName = isString;

const AUTH_OP_FIELDS: Readonly<Record<string, Readonly<Record<string, Check>>>> = {
  authEnable: {},
  authDisable: {},
  userAdd: { name: isName, passwordHash: orNull(isString) },
  userDelete: { name: isName },
  userChangePassword: { name: isName, passwordHash: isString },
  userGet: { name: isName },
  userList: {},
  userGrantRole: { user: isName, role: isName },
  userRevokeRole: { name: isName, role: isName },
  roleAdd: { name: isName },
  roleGet: { role: isName },
  roleList: {},
  roleDelete: { role: isName },
  roleGrantPermission: { name: isName, perm: orNull(isPermission) },
  roleRevokePermission: { role: isName, key: isBytes, rangeEnd: isBytes },
};

function isAuthOp(v: unknown): boolean {
  if (!isObject(v) || typeof v.op !== 'string' || !Object.hasOwn(AUTH_OP_FIELDS, v.op))
    return false;
  return fields(v, AUTH_OP_FIELDS[v.op] ?? {});
}

/** Whether a decoded value has the shape of a Command, every field of its type. */
export function isCommand(v: unknown): v is Command {
  if (!isObject(v)) return false;
  switch (v.type) {
    case 'put':
      return fields(v.request, PUT_FIELDS) && isAs(v.as);
    case 'deleteRange':
      return fields(v.request, DELETE_FIELDS) && isAs(v.as);
    case 'txn':
      return isTxn(v.request, 1) && isAs(v.as);
    case 'compact':
      return fields(v.request, { revision: isInt, physical: opt(isBool) }) && isAs(v.as);
    case 'leaseGrant':
      return fields(v, { id: isBigint, ttlSeconds: isFinite, nowMs: isFinite });
    case 'leaseRevoke':
      return fields(v, { id: isBigint, ifExpiredAtMs: opt(isFinite), as: isAs });
    case 'leaseKeepAlive':
      return fields(v, { id: isBigint, nowMs: isFinite });
    case 'leaseCheckpoint':
      return Array.isArray(v.checkpoints) && v.checkpoints.every(isCheckpoint);
    case 'leaseRefreshAll':
      return fields(v, { nowMs: isFinite, extraMs: isFinite });
    case 'auth':
      return isAuthOp(v.op) && isAs(v.as);
    case 'authenticate':
      return fields(v, { name: isString, tokenPrefix: isString, checkedRevision: isInt });
    case 'alarm':
      return fields(v, { action: oneOf('ACTIVATE', 'DEACTIVATE'), member: isAlarmMember });
    default:
      return false;
  }
}
