// etcd's client-visible errors as data: the gRPC status code and the exact message text, which
// clients match byte-for-byte (etcd's api/v3rpc/rpctypes/error.go). The core returns these as
// values; the server edge turns them into gRPC statuses.

export type GrpcCode =
  | 'Canceled'
  | 'InvalidArgument'
  | 'NotFound'
  | 'FailedPrecondition'
  | 'OutOfRange'
  | 'ResourceExhausted'
  | 'Unavailable'
  | 'DeadlineExceeded'
  | 'PermissionDenied'
  | 'Unauthenticated'
  | 'DataLoss'
  | 'Unknown';

export interface EtcdError {
  readonly code: GrpcCode;
  readonly message: string;
}

const err = (code: GrpcCode, message: string): EtcdError => Object.freeze({ code, message });

export const ERR_EMPTY_KEY = err('InvalidArgument', 'etcdserver: key is not provided');
export const ERR_KEY_NOT_FOUND = err('InvalidArgument', 'etcdserver: key not found');
export const ERR_VALUE_PROVIDED = err('InvalidArgument', 'etcdserver: value is provided');
export const ERR_LEASE_PROVIDED = err('InvalidArgument', 'etcdserver: lease is provided');
export const ERR_TOO_MANY_OPS = err(
  'InvalidArgument',
  'etcdserver: too many operations in txn request',
);
export const ERR_DUPLICATE_KEY = err(
  'InvalidArgument',
  'etcdserver: duplicate key given in txn request',
);
export const ERR_INVALID_SORT_OPTION = err('InvalidArgument', 'etcdserver: invalid sort option');
export const ERR_COMPACTED = err(
  'OutOfRange',
  'etcdserver: mvcc: required revision has been compacted',
);
export const ERR_FUTURE_REV = err(
  'OutOfRange',
  'etcdserver: mvcc: required revision is a future revision',
);
export const ERR_NO_SPACE = err('ResourceExhausted', 'etcdserver: mvcc: database space exceeded');
/**
 * A write while a CORRUPT alarm is raised, for any member (etcd etcdserver/errors.go ErrCorrupt,
 * rpctypes ErrGRPCCorrupt): every member refuses it; reads go on.
 */
export const ERR_CORRUPT = err('DataLoss', 'etcdserver: corrupt cluster');
export const ERR_LEASE_NOT_FOUND = err('NotFound', 'etcdserver: requested lease not found');
export const ERR_LEASE_EXIST = err('FailedPrecondition', 'etcdserver: lease already exists');
export const ERR_LEASE_TTL_TOO_LARGE = err('OutOfRange', 'etcdserver: too large lease TTL');
export const ERR_REQUEST_TOO_LARGE = err('InvalidArgument', 'etcdserver: request is too large');

// Errors of the server around the machine: leadership, time, shutdown, membership.
export const ERR_NO_LEADER = err('Unavailable', 'etcdserver: no leader');
export const ERR_NOT_LEADER = err('FailedPrecondition', 'etcdserver: not leader');
export const ERR_LEADER_CHANGED = err('Unavailable', 'etcdserver: leader changed');
export const ERR_TIMEOUT = err('Unavailable', 'etcdserver: request timed out');
/**
 * etcd's ErrTimeoutDueToLeaderFail (etcdserver/errors.go): a write whose outcome is unknown
 * because the leader it went through changed or failed. Like every `request timed out` variant,
 * clients must treat it as "may or may not have been applied".
 */
export const ERR_TIMEOUT_LEADER_FAIL = err(
  'Unavailable',
  'etcdserver: request timed out, possibly due to previous leader failure',
);
export const ERR_STOPPED = err('Unavailable', 'etcdserver: server stopped');
export const ERR_TOO_MANY_REQUESTS = err('ResourceExhausted', 'etcdserver: too many requests');
export const ERR_CANCELED = err('Canceled', 'etcdserver: request canceled');
export const ERR_DEADLINE_EXCEEDED = err(
  'DeadlineExceeded',
  'etcdserver: context deadline exceeded',
);
export const ERR_PEER_URL_EXIST = err('FailedPrecondition', 'etcdserver: Peer URLs already exists');
export const ERR_MEMBER_NOT_FOUND = err('NotFound', 'etcdserver: member not found');
export const ERR_MEMBER_NOT_LEARNER = err(
  'FailedPrecondition',
  'etcdserver: can only promote a learner member',
);
export const ERR_LEARNER_NOT_READY = err(
  'FailedPrecondition',
  'etcdserver: can only promote a learner member which is in sync with leader',
);
export const ERR_BAD_LEADER_TRANSFEREE = err(
  'FailedPrecondition',
  'etcdserver: bad leader transferee',
);
/**
 * etcd's ErrTimeoutLeaderTransfer (etcdserver/errors.go), which 3.4's togRPCError does not map
 * (v3rpc/util.go): it reaches clients with code Unknown.
 */
export const ERR_TIMEOUT_LEADER_TRANSFER = err(
  'Unknown',
  'etcdserver: request timed out, leader transfer took too long',
);
export const ERR_WATCH_CANCELED = err('Canceled', 'etcdserver: watch canceled');
/**
 * The Election service's plain Go errors (client/v3/concurrency/election.go) reach clients with
 * code Unknown.
 */
export const ERR_ELECTION_NO_LEADER = err('Unknown', 'election: no leader');
export const ERR_ELECTION_NOT_LEADER = err('Unknown', 'election: not leader');
export const ERR_SESSION_EXPIRED = err('Unknown', 'mutex: session is expired');
/**
 * tenure's, not etcd's: an Unlock found the key created after the request reached the member, so
 * it may be a newer holder's (or the member had not yet heard of the caller's grant). Nothing was
 * deleted; sending the Unlock again is safe.
 */
export const ERR_UNLOCK_KEY_NEWER = err(
  'Unavailable',
  'mutex: lock key was created after this unlock arrived; nothing deleted, retry',
);

// Auth errors (etcd 3.4's rpctypes/error.go ErrGRPC*, codes as etcd maps them in v3rpc/util.go).
export const ERR_ROOT_USER_NOT_EXIST = err(
  'FailedPrecondition',
  'etcdserver: root user does not exist',
);
export const ERR_ROOT_ROLE_NOT_EXIST = err(
  'FailedPrecondition',
  'etcdserver: root user does not have root role',
);
export const ERR_USER_ALREADY_EXIST = err(
  'FailedPrecondition',
  'etcdserver: user name already exists',
);
export const ERR_USER_EMPTY = err('InvalidArgument', 'etcdserver: user name is empty');
export const ERR_USER_NOT_FOUND = err('FailedPrecondition', 'etcdserver: user name not found');
export const ERR_ROLE_ALREADY_EXIST = err(
  'FailedPrecondition',
  'etcdserver: role name already exists',
);
export const ERR_ROLE_NOT_FOUND = err('FailedPrecondition', 'etcdserver: role name not found');
export const ERR_ROLE_EMPTY = err('InvalidArgument', 'etcdserver: role name is empty');
export const ERR_AUTH_FAILED = err(
  'InvalidArgument',
  'etcdserver: authentication failed, invalid user ID or password',
);
export const ERR_PERMISSION_NOT_GIVEN = err('InvalidArgument', 'etcdserver: permission not given');
export const ERR_PERMISSION_DENIED = err('PermissionDenied', 'etcdserver: permission denied');
export const ERR_ROLE_NOT_GRANTED = err(
  'FailedPrecondition',
  'etcdserver: role is not granted to the user',
);
export const ERR_PERMISSION_NOT_GRANTED = err(
  'FailedPrecondition',
  'etcdserver: permission is not granted to the role',
);
export const ERR_AUTH_NOT_ENABLED = err(
  'FailedPrecondition',
  'etcdserver: authentication is not enabled',
);
export const ERR_INVALID_AUTH_TOKEN = err('Unauthenticated', 'etcdserver: invalid auth token');
export const ERR_INVALID_AUTH_MGMT = err('InvalidArgument', 'etcdserver: invalid auth management');
export const ERR_AUTH_OLD_REVISION = err(
  'InvalidArgument',
  'etcdserver: revision of auth store is old',
);
/** etcd leaves this one unmapped (auth/store.go ErrNoPasswordUser), so it arrives as Unknown. */
export const ERR_NO_PASSWORD_USER = err(
  'Unknown',
  'auth: authentication failed, password was given for no password user',
);

/** Watch cancel reasons (sent in a WatchResponse, not as a gRPC status). */
export const WATCH_CANCEL_COMPACTED = ERR_COMPACTED.message;
export const WATCH_CANCEL_DUPLICATE_ID = 'mvcc: duplicate watch ID provided on the WatchStream';
export const WATCH_CANCEL_EMPTY_RANGE = 'mvcc: watcher range is empty';

export function isEtcdError(x: unknown): x is EtcdError {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as { code?: unknown }).code === 'string' &&
    typeof (x as { message?: unknown }).message === 'string' &&
    Object.keys(x).length === 2
  );
}
