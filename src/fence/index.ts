// tenure/fence: fencing at the point of effect. An election bounds who may act; only a token check
// at the data bounds what a zombie can do. A leader writes through the PostgreSQL fence with the
// SDK's lock token (the lock key's create revision):
//
//   const session = await client.session();               // client = await connect({ endpoints })
//   await new Lock(client, session, 'jobs').run(({ token }) =>
//     fencedTransaction(pool, { scope: 'jobs', token }, (db) =>
//       db.query('UPDATE jobs SET state = $1 WHERE id = $2', ['done', id])),
//   );
//
// A deposed holder's late transaction rolls back with StaleTokenError (code FENCE_STALE_TOKEN).
// Adapters: memory, PostgreSQL, a directory of files, HTTP (node:http, Express, Fastify, fetch),
// etcd/tenure keys; idempotency keys for effects that cannot check a token. The contract all of
// them keep is in contract.ts.
export {
  admits,
  checkScope,
  checkToken,
  parseToken,
  tokenMax,
  scopeBytesMax,
  type Fence,
  type FenceCallOptions,
} from './contract.js';
export {
  FenceError,
  StaleTokenError,
  InvalidTokenError,
  InvalidScopeError,
  IdempotencyInProgressError,
  IdempotencyInDoubtError,
  type FenceErrorCode,
} from './errors.js';
export { MemoryFence, type MemoryFenceTx } from './memory.js';
export {
  PostgresFence,
  createFenceTable,
  fencedTransaction,
  type FencedTransactionOptions,
  type PostgresFenceOptions,
  type PgPool,
  type PgClient,
  type PgResult,
  type PgIsolation,
} from './postgres.js';
export { FileFence, markDirName, type FencedFiles } from './files.js';
export {
  httpFencing,
  fencedFetch,
  withFencingToken,
  staleBody,
  fencingTokenHeader,
  fencingScopeHeader,
  type HttpFencing,
  type HttpFencingOptions,
  type FencedRequest,
  type FencingDecision,
  type FencingErrorBody,
  type FastifyReplyLike,
} from './http.js';
export {
  EtcdFence,
  holderCompare,
  type EtcdFenceTx,
  type EtcdClientLike,
  type TxnLike,
  type TxnResultLike,
  type CreateRevisionCompare,
  type RangeOpData,
} from './etcd.js';
export {
  once,
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  idempotencyKeyBytesMax,
  type IdempotencyStore,
  type ClaimOutcome,
  type JsonValue,
  type OnceMode,
  type OnceOptions,
  type OnceResult,
} from './idempotency.js';
