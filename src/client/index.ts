// tenure/client: the public surface of the SDK (package.json "exports"). Everything not exported
// here is internal and may change.
import './dispose.js';

export { connect, Client, type ClientOptions } from './client.js';
export type { TlsOptions } from './tls.js';
export type { Credentials } from './auth-token.js';
export { Auth, type Permission, type PermissionType } from './auth.js';
export type { CallOptions } from './call-options.js';
export type { Bytes, KeyValue, KeyRangeOptions, ResponseHeader } from './codec.js';
export { KV } from './kv.js';
export {
  Txn,
  op,
  compare,
  type Op,
  type TxnSpec,
  type Compare,
  type CompareOperator,
  type CompareTarget,
  type RangeOptions,
  type PutOptions,
  type DeleteOptions,
  type RangeResult,
  type PutResult,
  type DeleteResult,
  type TxnResult,
  type OpResult,
  type SortOrder,
  type SortTarget,
} from './txn.js';
export {
  Lease,
  LeaseKeepAlive,
  type LeaseGrantResult,
  type LeaseTimeToLiveResult,
  type KeepAliveResult,
} from './lease.js';
export { Watcher, type WatchOptions, type WatchEvent, type WatchBatch } from './watch.js';
export {
  Session,
  sessionTiming,
  type SessionOptions,
  type SessionEvents,
  type SessionTransport,
} from './session.js';
export {
  SessionState,
  type SessionPhase,
  type SessionInput,
  type SessionTiming,
  type SessionTransition,
  type TransitionReason,
} from './session-state.js';
export { systemClock, ManualClock, type Clock, type Cancel } from './clock.js';
export {
  EtcdError,
  InvalidArgumentError,
  CompactedError,
  FutureRevisionError,
  LeaseNotFoundError,
  LeaseExistsError,
  NoSpaceError,
  TooManyRequestsError,
  AuthError,
  PermissionDeniedError,
  AuthFailedError,
  InvalidAuthTokenError,
  AuthNotEnabledError,
  UserEmptyError,
  AuthOldRevisionError,
  UserAlreadyExistsError,
  UserNotFoundError,
  RoleAlreadyExistsError,
  RoleNotFoundError,
  RoleNotGrantedError,
  PermissionNotGrantedError,
  RootUserNotExistError,
  RootRoleNotExistError,
  UnavailableError,
  NoLeaderError,
  UnknownOutcomeError,
  TimeoutError,
  ClientClosedError,
  SessionJeopardyError,
  SessionExpiredError,
  type EtcdErrorCode,
} from './errors.js';

// --- Coordination recipes (issue 5, part 2): Lock, Election, LeaderElector with fencing tokens.
export { Lock, LockGrant, type LockOptions, type LockContext } from './lock.js';
export {
  Election,
  Leadership,
  LeaderObserver,
  type ElectionOptions,
  type LeaderInfo,
  type LeaderContext,
  type ObserveOptions,
} from './election.js';
export { LeaderElector, type LeaderElectorOptions, type LeadingContext } from './leader-elector.js';
export type {
  ElectorBackend,
  ElectorObserver,
  ElectorTerm,
  PreviousLeader,
} from './elector-backend.js';
export { etcdElectorBackend, EtcdTerm, type EtcdElectorBackendOptions } from './elector-etcd.js';
export {
  RecipeError,
  type RecipeErrorCode,
  type RecipeTrace,
  type RecipeTraceEvent,
} from './recipe-errors.js';
export {
  contenderKey,
  queuePrefix,
  releaseMarkerKey,
  handOffHintKey,
  lastLeaderKey,
  tokenAdmits,
} from './recipe-keys.js';

// --- Service registry: etcd's Go naming layout and format (docs/registry.md).
export { Registry, Registration, type RegisterOptions, type RegistryList } from './registry.js';
export { RegistryWatcher, type RegistryWatchOptions } from './registry-watch.js';
export type {
  Instance,
  InstanceChange,
  InstanceSet,
  RegistryView,
  SkippedValue,
} from './registry-view.js';
export {
  decodeEndpoint,
  encodeEndpoint,
  instanceKey,
  servicePrefix,
  type Endpoint,
  type JsonValue,
} from './registry-format.js';
