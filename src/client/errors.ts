// Typed errors of the client SDK. Every error the SDK throws (other than the caller's own
// `signal.reason`, which is rethrown as is) is an `EtcdError` with a stable string `code` to match
// on, the gRPC status code and server message when there was one, and the underlying error as
// `cause`.
//
// Server errors are recognised by their exact message text, which etcd sends byte-for-byte and
// clients match on (etcd's api/v3rpc/rpctypes/error.go); the gRPC status code is only the fallback
// for messages we do not know.
import { status as GrpcStatus } from '@grpc/grpc-js';

/** Stable codes; new ones may be added, existing ones never change meaning. */
export type EtcdErrorCode =
  | 'EMPTY_KEY'
  | 'KEY_NOT_FOUND'
  | 'VALUE_PROVIDED'
  | 'LEASE_PROVIDED'
  | 'TOO_MANY_OPS'
  | 'DUPLICATE_KEY'
  | 'INVALID_SORT_OPTION'
  | 'REQUEST_TOO_LARGE'
  | 'INVALID_ARGUMENT'
  | 'COMPACTED'
  | 'FUTURE_REVISION'
  | 'NO_SPACE'
  | 'TOO_MANY_REQUESTS'
  | 'LEASE_NOT_FOUND'
  | 'LEASE_EXISTS'
  | 'LEASE_TTL_TOO_LARGE'
  | 'WATCH_CANCELED'
  | 'NO_LEADER'
  | 'NOT_LEADER'
  | 'LEADER_CHANGED'
  | 'SERVER_TIMEOUT'
  | 'SERVER_STOPPED'
  | 'UNAVAILABLE'
  | 'UNKNOWN_OUTCOME'
  | 'PERMISSION_DENIED'
  | 'INVALID_AUTH_TOKEN'
  | 'AUTH_NOT_ENABLED'
  | 'AUTH_FAILED'
  | 'AUTH_OLD_REVISION'
  | 'USER_EMPTY'
  | 'USER_ALREADY_EXISTS'
  | 'USER_NOT_FOUND'
  | 'ROLE_EMPTY'
  | 'ROLE_ALREADY_EXISTS'
  | 'ROLE_NOT_FOUND'
  | 'ROLE_NOT_GRANTED'
  | 'PERMISSION_NOT_GRANTED'
  | 'PERMISSION_NOT_GIVEN'
  | 'ROOT_USER_NOT_EXIST'
  | 'ROOT_ROLE_NOT_EXIST'
  | 'INVALID_AUTH_MGMT'
  | 'MEMBER_NOT_FOUND'
  | 'TIMEOUT'
  | 'CLIENT_CLOSED'
  | 'SESSION_JEOPARDY'
  | 'SESSION_EXPIRED'
  | 'UNKNOWN';

export interface EtcdErrorDetails {
  /** gRPC status code of the failed call, when the error came from one. */
  readonly grpcCode?: number;
  /** The server's message (gRPC status details), when there was one. */
  readonly serverMessage?: string;
  /** The endpoint the failing attempt went to. */
  readonly endpoint?: string;
  readonly cause?: unknown;
}

/** Base class of every SDK error. Match on `code` (stable) or `instanceof` a subclass. */
export class EtcdError extends Error {
  readonly code: EtcdErrorCode;
  readonly grpcCode: number | undefined;
  readonly serverMessage: string | undefined;
  readonly endpoint: string | undefined;

  constructor(code: EtcdErrorCode, message: string, details: EtcdErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.grpcCode = details.grpcCode;
    this.serverMessage = details.serverMessage;
    this.endpoint = details.endpoint;
  }
}

/** The request is malformed (empty key, too many txn ops, duplicate key, ...); see `code`. */
export class InvalidArgumentError extends EtcdError {}

/** A revision below the compaction point was asked for (Range, Watch, Compact). */
export class CompactedError extends EtcdError {
  /** The compact revision, when the server said (watch cancellations do); else 0n. */
  readonly compactRevision: bigint;
  constructor(message: string, compactRevision: bigint, details: EtcdErrorDetails = {}) {
    super('COMPACTED', message, details);
    this.compactRevision = compactRevision;
  }
}

/** A revision above the current store revision was asked for. */
export class FutureRevisionError extends EtcdError {}

/** The lease does not exist (never granted, revoked, or expired). */
export class LeaseNotFoundError extends EtcdError {}

/** LeaseGrant with an ID already in use. */
export class LeaseExistsError extends EtcdError {}

/** The server's backend quota is exhausted (NOSPACE alarm). */
export class NoSpaceError extends EtcdError {}

/** The server is shedding load; retry later. */
export class TooManyRequestsError extends EtcdError {}

/**
 * Authentication or authorisation failed, or an auth management request was refused; see `code`
 * and the subclasses below (one per etcd message, api/v3rpc/rpctypes/error.go).
 */
export class AuthError extends EtcdError {}

/** The user may not read or write this key or range (gRPC 7, PermissionDenied). */
export class PermissionDeniedError extends AuthError {}

/** Authenticate refused the user name or password (gRPC 3). */
export class AuthFailedError extends AuthError {}

/**
 * The token is unknown to the member (expired, or the member restarted: etcd's simple tokens live
 * in memory) (gRPC 16, Unauthenticated). A client with credentials authenticates again and retries
 * once before it reports this.
 */
export class InvalidAuthTokenError extends AuthError {}

/** Authenticate (or another auth call) on a cluster whose auth is disabled (gRPC 9). */
export class AuthNotEnabledError extends AuthError {}

/** A request without a user (no token) on a cluster with auth enabled (gRPC 3). */
export class UserEmptyError extends AuthError {}

/**
 * The token was issued before the auth store last changed (a user or role edit) (gRPC 3). Like
 * InvalidAuthTokenError, a client with credentials authenticates again and retries once.
 */
export class AuthOldRevisionError extends AuthError {}

/** UserAdd of a user that exists. */
export class UserAlreadyExistsError extends AuthError {}

/** A user management call named a user that does not exist. */
export class UserNotFoundError extends AuthError {}

/** RoleAdd of a role that exists. */
export class RoleAlreadyExistsError extends AuthError {}

/** A role management call named a role that does not exist. */
export class RoleNotFoundError extends AuthError {}

/** UserRevokeRole of a role the user does not have. */
export class RoleNotGrantedError extends AuthError {}

/** RoleRevokePermission of a permission the role does not have. */
export class PermissionNotGrantedError extends AuthError {}

/** AuthEnable before a `root` user exists. */
export class RootUserNotExistError extends AuthError {}

/** AuthEnable while the `root` user lacks the `root` role. */
export class RootRoleNotExistError extends AuthError {}

/**
 * A refusal that a fresh token may cure: the token is unknown or older than the auth store, or no
 * token was sent (auth was enabled after the client connected). Each is decided before the
 * request changes anything (etcd checks the token before proposing and the permission before
 * applying; etcdserver/v3_server.go, etcdserver/apply_auth.go), so a write refused this way was
 * not applied and may be sent again.
 */
export function isTokenRefusal(e: unknown): boolean {
  return (
    e instanceof InvalidAuthTokenError ||
    e instanceof AuthOldRevisionError ||
    e instanceof UserEmptyError
  );
}

/**
 * No member could serve the call right now: connection failures, no leader, leader change,
 * server-side timeout, server stopping. A read that fails this way has been retried on the other
 * endpoints already (see connection.ts for the failover rule).
 */
export class UnavailableError extends EtcdError {}

/** The cluster has no leader (a subclass of UnavailableError). */
export class NoLeaderError extends UnavailableError {}

/**
 * A write failed in a way that does not tell whether the server applied it (the connection broke
 * or the server timed out after the request was sent). It was NOT retried: retrying a Put or a Txn
 * could apply it twice. Read back to find out. `code` is 'UNKNOWN_OUTCOME'.
 */
export class UnknownOutcomeError extends UnavailableError {}

/** The call's `timeoutMs` ran out (the client's own deadline, not the server's). */
export class TimeoutError extends EtcdError {}

/** The client was closed before or during the call. */
export class ClientClosedError extends EtcdError {}

/**
 * A session is in jeopardy: its renewal is overdue, so work that relies on it must stop now, while
 * the server still certainly holds the lease (session.ts). It may still recover.
 */
export class SessionJeopardyError extends EtcdError {}

/** A session (lease) has expired or was closed; work bound to it must stop. */
export class SessionExpiredError extends EtcdError {}

type Factory = (message: string, details: EtcdErrorDetails) => EtcdError;

const inv =
  (code: EtcdErrorCode): Factory =>
  (m, d) =>
    new InvalidArgumentError(code, m, d);
const unavailable =
  (code: EtcdErrorCode): Factory =>
  (m, d) =>
    new UnavailableError(code, m, d);
type AuthErrorClass = new (
  code: EtcdErrorCode,
  message: string,
  details: EtcdErrorDetails,
) => AuthError;
const auth =
  (code: EtcdErrorCode, Class: AuthErrorClass = AuthError): Factory =>
  (m, d) =>
    new Class(code, m, d);

/** Exact server messages (etcd's api/v3rpc/rpctypes/error.go), mapped to the error they mean. */
const byMessage: ReadonlyMap<string, Factory> = new Map<string, Factory>([
  ['etcdserver: key is not provided', inv('EMPTY_KEY')],
  ['etcdserver: key not found', inv('KEY_NOT_FOUND')],
  ['etcdserver: value is provided', inv('VALUE_PROVIDED')],
  ['etcdserver: lease is provided', inv('LEASE_PROVIDED')],
  ['etcdserver: too many operations in txn request', inv('TOO_MANY_OPS')],
  ['etcdserver: duplicate key given in txn request', inv('DUPLICATE_KEY')],
  ['etcdserver: invalid sort option', inv('INVALID_SORT_OPTION')],
  ['etcdserver: request is too large', inv('REQUEST_TOO_LARGE')],
  [
    'etcdserver: mvcc: required revision has been compacted',
    (m, d) => new CompactedError(m, 0n, d),
  ],
  [
    'etcdserver: mvcc: required revision is a future revision',
    (m, d) => new FutureRevisionError('FUTURE_REVISION', m, d),
  ],
  ['etcdserver: mvcc: database space exceeded', (m, d) => new NoSpaceError('NO_SPACE', m, d)],
  [
    'etcdserver: requested lease not found',
    (m, d) => new LeaseNotFoundError('LEASE_NOT_FOUND', m, d),
  ],
  ['etcdserver: lease already exists', (m, d) => new LeaseExistsError('LEASE_EXISTS', m, d)],
  ['etcdserver: too large lease TTL', inv('LEASE_TTL_TOO_LARGE')],
  ['etcdserver: watch canceled', (m, d) => new EtcdError('WATCH_CANCELED', m, d)],
  ['etcdserver: too many requests', (m, d) => new TooManyRequestsError('TOO_MANY_REQUESTS', m, d)],
  ['etcdserver: no leader', (m, d) => new NoLeaderError('NO_LEADER', m, d)],
  ['etcdserver: not leader', unavailable('NOT_LEADER')],
  ['etcdserver: leader changed', unavailable('LEADER_CHANGED')],
  ['etcdserver: request timed out', unavailable('SERVER_TIMEOUT')],
  ['etcdserver: server stopped', unavailable('SERVER_STOPPED')],
  ['etcdserver: permission denied', auth('PERMISSION_DENIED', PermissionDeniedError)],
  ['etcdserver: invalid auth token', auth('INVALID_AUTH_TOKEN', InvalidAuthTokenError)],
  ['etcdserver: authentication is not enabled', auth('AUTH_NOT_ENABLED', AuthNotEnabledError)],
  [
    'etcdserver: authentication failed, invalid user ID or password',
    auth('AUTH_FAILED', AuthFailedError),
  ],
  ['etcdserver: revision of auth store is old', auth('AUTH_OLD_REVISION', AuthOldRevisionError)],
  ['etcdserver: user name is empty', auth('USER_EMPTY', UserEmptyError)],
  ['etcdserver: user name already exists', auth('USER_ALREADY_EXISTS', UserAlreadyExistsError)],
  ['etcdserver: user name not found', auth('USER_NOT_FOUND', UserNotFoundError)],
  ['etcdserver: role name is empty', auth('ROLE_EMPTY')],
  ['etcdserver: role name already exists', auth('ROLE_ALREADY_EXISTS', RoleAlreadyExistsError)],
  ['etcdserver: role name not found', auth('ROLE_NOT_FOUND', RoleNotFoundError)],
  ['etcdserver: role is not granted to the user', auth('ROLE_NOT_GRANTED', RoleNotGrantedError)],
  [
    'etcdserver: permission is not granted to the role',
    auth('PERMISSION_NOT_GRANTED', PermissionNotGrantedError),
  ],
  ['etcdserver: permission not given', auth('PERMISSION_NOT_GIVEN')],
  ['etcdserver: root user does not exist', auth('ROOT_USER_NOT_EXIST', RootUserNotExistError)],
  [
    'etcdserver: root user does not have root role',
    auth('ROOT_ROLE_NOT_EXIST', RootRoleNotExistError),
  ],
  ['etcdserver: invalid auth management', auth('INVALID_AUTH_MGMT')],
  ['etcdserver: member not found', (m, d) => new EtcdError('MEMBER_NOT_FOUND', m, d)],
]);

/**
 * Prefixes for the etcd 3.4 variants of the timeout message ("..., possibly due to previous leader
 * failure", "..., possibly due to connection lost"; rpctypes ErrGRPCTimeoutDueToLeaderFail and
 * ErrGRPCTimeoutDueToConnectionLost).
 */
const byPrefix: ReadonlyArray<readonly [string, Factory]> = [
  ['etcdserver: request timed out', unavailable('SERVER_TIMEOUT')],
];

/** The shape of a gRPC failure (grpc-js ServiceError / StatusObject). */
export interface GrpcFailure {
  readonly code: number;
  readonly details: string;
}

/** An Error shaped like a gRPC failure, for failures the SDK detects itself. */
export function grpcFailure(code: number, details: string): Error & GrpcFailure {
  return Object.assign(new Error(details), { code, details });
}

export function isGrpcFailure(e: unknown): e is GrpcFailure {
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof (e as { code?: unknown }).code === 'number' &&
    typeof (e as { details?: unknown }).details === 'string'
  );
}

/**
 * A Go gRPC status as text, `rpc error: code = Unauthenticated desc = etcdserver: ...`: etcd 3.4
 * puts a status's Error() string in a watch's cancel_reason (api/v3rpc/watch.go, where a create
 * the token or the permissions refuse is cancelled with `rpctypes.ErrGRPC....Error()`).
 */
const goStatusText = /^rpc error: code = (\w+) desc = ([\s\S]*)$/;

/** A Go codes.Code name (`PermissionDenied`) as its number, from grpc-js's PERMISSION_DENIED. */
function goCodeNumber(name: string): number | undefined {
  const key = name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
  const n = (GrpcStatus as unknown as Record<string, unknown>)[key];
  return typeof n === 'number' ? n : undefined;
}

/** The typed error for a server message (a watch cancel_reason or a status's details). */
export function errorFromMessage(
  message: string,
  grpcCode: number | undefined,
  details: Omit<EtcdErrorDetails, 'serverMessage' | 'grpcCode'> = {},
): EtcdError {
  const go = goStatusText.exec(message);
  if (go !== null) {
    const code = goCodeNumber(go[1] as string) ?? grpcCode;
    return errorFromMessage(go[2] as string, code, details);
  }
  const d: EtcdErrorDetails = {
    ...details,
    serverMessage: message,
    ...(grpcCode === undefined ? {} : { grpcCode }),
  };
  const exact = byMessage.get(message);
  if (exact !== undefined) return exact(message, d);
  for (const [prefix, make] of byPrefix) if (message.startsWith(prefix)) return make(message, d);
  switch (grpcCode) {
    case GrpcStatus.UNAVAILABLE:
      return new UnavailableError('UNAVAILABLE', message, d);
    case GrpcStatus.INVALID_ARGUMENT:
      return new InvalidArgumentError('INVALID_ARGUMENT', message, d);
    case GrpcStatus.PERMISSION_DENIED:
      return new PermissionDeniedError('PERMISSION_DENIED', message, d);
    case GrpcStatus.UNAUTHENTICATED:
      return new InvalidAuthTokenError('INVALID_AUTH_TOKEN', message, d);
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return new TooManyRequestsError('TOO_MANY_REQUESTS', message, d);
    default:
      return new EtcdError('UNKNOWN', message, d);
  }
}

/** The typed error for a failed gRPC call. */
export function errorFromGrpc(e: GrpcFailure, endpoint?: string): EtcdError {
  return errorFromMessage(e.details, e.code, {
    cause: e,
    ...(endpoint === undefined ? {} : { endpoint }),
  });
}
