// tenure/pg: the SDK's Session, Lock, Election and LeaderElector backend over PostgreSQL, for a
// team that has PostgreSQL and no etcd (docs/postgres.md). One table, each decision one
// statement, expiry by the database's clock; the same Session class (jeopardy, signals) as on
// etcd; fencing tokens that work with tenure/fence's fencedTransaction, and leasedTransaction
// for resources in the same database. `pg` is an optional peer dependency: pass your pg.Pool, or
// a connection string (then `pg` is loaded).
export {
  connectPg,
  migrate,
  PgBackend,
  pollIntervalMsDefault,
  type ConnectPgOptions,
} from './backend.js';
export {
  PgLock,
  PgLockGrant,
  PgHold,
  type PgLockContext,
  type PgLockOptions,
  type PgLockRunOptions,
} from './lock.js';
export { PgElection, PgLeadership, PgLeaderObserver } from './election.js';
export { PgSessionTransport, ttlSecondsMin } from './transport.js';
export { leasedTransaction, type LeasedTransactionOptions } from './leased-transaction.js';
export { LeaseLostError } from './errors.js';
export { tableDefault } from './sql.js';
export type { PgTrace, PgTraceEvent } from './take.js';
