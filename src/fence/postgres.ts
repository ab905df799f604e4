// The PostgreSQL fence: the token check and the caller's SQL in one transaction, so the database
// itself refuses a zombie's write: it keeps the highest token it has seen and rejects lower ones
// (the fencing tokens of Kleppmann, How to do distributed locking, 2016).
//
//   await createFenceTable(pool);
//   await fencedTransaction(pool, { scope: 'jobs', token }, async (client) => {
//     await client.query('UPDATE jobs SET state = $1 WHERE id = $2', ['done', id]);
//   });
//
// The fence table holds one row per scope: (scope, token). The transaction starts by raising that
// row's token with
//
//   INSERT INTO fence (scope, token) VALUES ($1, $2)
//   ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token WHERE fence.token <= EXCLUDED.token
//   RETURNING token
//
// and goes on to the caller's SQL only if a row came back; no row means a higher token is
// recorded, and the transaction is rolled back with StaleTokenError.
//
// Why this is safe at READ COMMITTED (PostgreSQL's default), not only at SERIALIZABLE: the upsert
// does not decide on a snapshot. INSERT … ON CONFLICT DO UPDATE locks the conflicting row, waiting
// for any transaction that holds it, and evaluates the WHERE clause against the newest committed
// version of the row (PostgreSQL docs, "Transaction Isolation", READ COMMITTED and ON CONFLICT);
// two first writers of a new scope serialise on the unique index the same way. The row lock is
// held until our COMMIT or ROLLBACK, so for one scope the fenced transactions run one at a time, each
// sees the token of every one that committed before it, and their commits are ordered by token.
// A lower token that arrives while a higher one is in flight waits, then finds the higher token and
// fails. At REPEATABLE READ or SERIALIZABLE the same upsert raises a serialization failure (40001)
// instead of waiting it out; callers at those levels retry as for any other transaction.
//
// The pg driver is not imported: the adapter takes anything shaped like a pg Pool (structural
// types below), so `tenure/fence` loads without `pg` installed.
import { checkScope, checkToken, type Fence, type FenceCallOptions } from './contract.js';
import { InvalidScopeError, StaleTokenError } from './errors.js';

/** The part of a pg `PoolClient` the adapters use. */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<PgResult>;
  /** Return the client to its pool; an error argument destroys the connection instead. */
  release(err?: Error | boolean): void;
}

export interface PgResult {
  readonly rows: readonly Record<string, unknown>[];
  readonly rowCount: number | null;
}

/** The part of a pg `Pool` the adapters use. */
export interface PgPool {
  connect(): Promise<PgClient>;
  query(text: string, values?: unknown[]): Promise<PgResult>;
}

export type PgIsolation = 'read committed' | 'repeatable read' | 'serializable';

export interface PostgresFenceOptions {
  /**
   * The fence table, optionally schema-qualified (`app.fence`). Default `tenure_fence`. Letters,
   * digits and underscores only: it is spliced into SQL as a quoted identifier.
   */
  readonly table?: string;
  /**
   * Isolation of the fenced transaction. Default 'read committed', which is enough for the fence
   * (see the header); choose a stronger one for the sake of the caller's own SQL.
   */
  readonly isolation?: PgIsolation;
}

export interface FencedTransactionOptions extends PostgresFenceOptions, FenceCallOptions {
  readonly scope: string;
  readonly token: bigint;
}

const tableDefault = 'tenure_fence';

/** A quoted, possibly schema-qualified identifier, or InvalidScopeError for a bad name. */
export function quoteTable(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/.test(name)) {
    throw new InvalidScopeError(
      `table name ${JSON.stringify(name)} must be [schema.]name of letters, digits and _`,
    );
  }
  return name
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
}

/** Create the fence table if it does not exist (idempotent; safe to run at every start). */
export async function createFenceTable(
  pool: Pick<PgPool, 'query'>,
  options: Pick<PostgresFenceOptions, 'table'> = {},
): Promise<void> {
  const t = quoteTable(options.table ?? tableDefault);
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${t} (
       scope text PRIMARY KEY,
       token bigint NOT NULL CHECK (token >= 0),
       updated_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
}

/**
 * Run `fn` in a transaction that commits only if `token` is at least the scope's high-water mark.
 * The mark is raised in the same transaction, so it and `fn`'s writes commit or roll back
 * together. A stale token rolls back before `fn` runs and rejects with StaleTokenError; an error
 * from `fn` rolls back (the mark too) and is rethrown.
 */
export async function fencedTransaction<T>(
  pool: Pick<PgPool, 'connect'>,
  options: FencedTransactionOptions,
  fn: (client: PgClient) => Promise<T>,
): Promise<T> {
  const { scope, token, signal } = options;
  checkScope(scope);
  checkToken(token);
  const t = quoteTable(options.table ?? tableDefault);
  signal?.throwIfAborted();
  const begin = `BEGIN ISOLATION LEVEL ${(options.isolation ?? 'read committed').toUpperCase()}`;
  return inTransaction(pool, begin, async (client) => {
    const raised = await client.query(
      `INSERT INTO ${t} AS fence (scope, token) VALUES ($1, $2)
       ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
       WHERE fence.token <= EXCLUDED.token
       RETURNING token`,
      [scope, token.toString()],
    );
    if (raised.rowCount !== 1) {
      // The row exists with a higher token, and our row lock attempt saw its newest version:
      // read it (still inside the transaction, which holds no lock on it) for the error.
      const now = await client.query(`SELECT token FROM ${t} WHERE scope = $1`, [scope]);
      const current = bigintOf(now.rows[0]?.token) ?? 0n;
      throw new StaleTokenError(scope, token, current);
    }
    signal?.throwIfAborted();
    const result = await fn(client);
    signal?.throwIfAborted();
    return result;
  });
}

/**
 * Run `fn` on one pooled connection between `begin` and COMMIT; any error rolls back and is
 * rethrown. A connection that cannot even roll back is destroyed rather than returned to the
 * pool. (fencedTransaction, tenure/pg's leasedTransaction and migrate use it.)
 */
export async function inTransaction<C extends PgClient, T>(
  pool: { connect(): Promise<C> },
  begin: string,
  fn: (client: C) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw e;
    }
  } finally {
    client.release(broken ?? false);
  }
}

/** The fence contract over a pg Pool; `write` is fencedTransaction. */
export class PostgresFence implements Fence<PgClient> {
  readonly #pool: PgPool;
  readonly #options: PostgresFenceOptions;

  constructor(pool: PgPool, options: PostgresFenceOptions = {}) {
    quoteTable(options.table ?? tableDefault);
    this.#pool = pool;
    this.#options = options;
  }

  /** createFenceTable with this fence's table. */
  createTable(): Promise<void> {
    return createFenceTable(this.#pool, this.#options);
  }

  write<T>(
    scope: string,
    token: bigint,
    effect: (client: PgClient) => Promise<T> | T,
    options: FenceCallOptions = {},
  ): Promise<T> {
    return fencedTransaction(
      this.#pool,
      { ...this.#options, ...options, scope, token },
      async (c) => effect(c),
    );
  }

  async current(scope: string, options: FenceCallOptions = {}): Promise<bigint | undefined> {
    checkScope(scope);
    options.signal?.throwIfAborted();
    const t = quoteTable(this.#options.table ?? tableDefault);
    const r = await this.#pool.query(`SELECT token FROM ${t} WHERE scope = $1`, [scope]);
    return bigintOf(r.rows[0]?.token);
  }
}

/** pg returns int8 as a decimal string (it does not fit a number); accept either. */
export function bigintOf(v: unknown): bigint | undefined {
  if (typeof v === 'string' || typeof v === 'number') return BigInt(v);
  if (typeof v === 'bigint') return v;
  return undefined;
}
