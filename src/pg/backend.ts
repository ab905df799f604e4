// The PostgreSQL backend object: one pool, one lease table, one LISTEN connection, and the
// sessions, locks and elections over them. It is also an ElectorBackend
// (src/client/elector-backend.ts), so the LeaderElector can run on it.
//
//   const pg = await connectPg({ connectionString: process.env.DATABASE_URL });
//   const session = await pg.session({ ttlSeconds: 10 });
//   await pg.lock(session, 'jobs/nightly').run(({ token }) => ...);
//   await session.close();
//   await pg.close();
import type pg from 'pg';
import type { CallOptions } from '../client/call-options.js';
import { ClientClosedError } from '../client/errors.js';
import type { ElectorBackend, ElectorTerm } from '../client/elector-backend.js';
import { Session, type SessionOptions } from '../client/session.js';
import { inTransaction } from '../fence/postgres.js';
import { callTimeoutMsDefault } from './call.js';
import type { PgContext } from './context.js';
import { makeDb, type Db } from './db.js';
import { PgElection, PgLeadership, type PgLeaderObserver } from './election.js';
import { Listener } from './listener.js';
import { PgLock, type PgLockOptions } from './lock.js';
import { statements, tableDefault } from './sql.js';
import { PgSessionTransport } from './transport.js';

/** A waiter re-checks a held row at least this often by default, in ms. */
export const pollIntervalMsDefault = 1_000;

export interface ConnectPgOptions {
  /** The caller's pool (not ended by close()); or give connectionString. */
  readonly pool?: pg.Pool;
  /** Make a pool of this URL (ended by close()); needs the `pg` package installed. */
  readonly connectionString?: string;
  /** Size of a pool made from connectionString; default 10 (pg's default). */
  readonly poolSize?: number;
  /** The lease table, optionally schema-qualified; default `tenure_leases`. */
  readonly table?: string;
  /** Create the table if missing (migrate()); default true. */
  readonly migrate?: boolean;
  /** Waiters and observers re-check at least this often, in ms; default 1 000. */
  readonly pollIntervalMs?: number;
  /** LISTEN for releases (default true); false leaves waiters to polling alone. */
  readonly listen?: boolean;
  /** Bound on session creation and single statements, in ms; default 5 000. */
  readonly defaultTimeoutMs?: number;
}

/**
 * Create the lease table and its id sequence if they do not exist (idempotent). Concurrent
 * callers are serialised by a transaction-scoped advisory lock: two CREATE TABLE IF NOT EXISTS
 * racing on a new name can otherwise fail on pg_class's unique index.
 */
export async function migrate(
  pool: Pick<pg.Pool, 'connect'>,
  options: { readonly table?: string } = {},
): Promise<void> {
  const table = options.table ?? tableDefault;
  await inTransaction(pool, 'BEGIN', async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tenure/pg ${table}`]);
    for (const s of statements(table).migrate) await client.query(s);
  });
}

export class PgBackend implements ElectorBackend {
  readonly table: string;
  readonly pool: pg.Pool;
  readonly transport: PgSessionTransport;
  readonly #ctx: PgContext;
  readonly #closing = new AbortController();
  readonly #ownsPool: boolean;
  readonly #defaultTimeoutMs: number;
  #closed: Promise<void> | undefined;

  constructor(pool: pg.Pool, ownsPool: boolean, options: ConnectPgOptions) {
    this.table = options.table ?? tableDefault;
    this.pool = pool;
    this.#ownsPool = ownsPool;
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? callTimeoutMsDefault;
    const db: Db = makeDb(pool, statements(this.table));
    const pollIntervalMs = options.pollIntervalMs ?? pollIntervalMsDefault;
    if (!(pollIntervalMs > 0)) throw new RangeError('connectPg: pollIntervalMs must be > 0');
    this.#ctx = {
      db,
      listener: new Listener(pool, db.sql.channel, options.listen ?? true),
      pollIntervalMs,
      closing: this.#closing.signal,
    };
    this.transport = new PgSessionTransport(db);
  }

  /** Aborts when close() is called. */
  get closingSignal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Notifications received on the LISTEN connection (diagnostics). */
  get notificationsReceived(): number {
    return this.#ctx.listener.received;
  }

  /** Start the LISTEN connection now rather than at the first wait. */
  listen(): Promise<void> {
    return this.#ctx.listener.ensure();
  }

  /** A session (a lease row) kept alive by the SDK's Session class. */
  session(options: SessionOptions = {}): Promise<Session> {
    if (this.#closing.signal.aborted) {
      return Promise.reject(new ClientClosedError('CLIENT_CLOSED', 'pg backend is closed'));
    }
    return Session.create(options.transport ?? this.transport, options, this.#defaultTimeoutMs);
  }

  lock(session: Session, name: string, options: PgLockOptions = {}): PgLock {
    return new PgLock(this.#ctx, session, name, options);
  }

  election(name: string): PgElection {
    return new PgElection(this.#ctx, name);
  }

  campaign(
    name: string,
    session: Session,
    value: Buffer,
    options: CallOptions,
  ): Promise<ElectorTerm> {
    return this.election(name).campaign(session, value, options);
  }

  /** ElectorBackend.recordLeader: the term's row names it as the last leader that started. */
  recordLeader(
    name: string,
    term: ElectorTerm,
    value: Buffer,
    options: CallOptions,
  ): Promise<boolean> {
    if (!(term instanceof PgLeadership) || term.name !== name) {
      throw new TypeError(`pg recordLeader: not a term of ${name} on this backend`);
    }
    return term.record(value, options);
  }

  observe(name: string, options: { readonly signal?: AbortSignal }): PgLeaderObserver {
    return this.election(name).observe(options);
  }

  /** End the LISTEN connection and waits; end the pool only if connectPg made it. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort(new ClientClosedError('CLIENT_CLOSED', 'pg backend closed'));
      await this.#ctx.listener.close();
      if (this.#ownsPool) await this.pool.end();
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Connect (pool or connection string), create the table unless `migrate: false`. */
export async function connectPg(options: ConnectPgOptions): Promise<PgBackend> {
  let pool = options.pool;
  let owns = false;
  if (pool === undefined) {
    if (options.connectionString === undefined) {
      throw new RangeError('connectPg: give pool or connectionString');
    }
    // Loaded only here: `tenure/pg` with a caller's pool never imports the driver itself.
    const driver = (await import('pg')).default;
    pool = new driver.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
    });
    // An idle client whose connection dies reports here; without a listener it would throw.
    pool.on('error', () => undefined);
    owns = true;
  }
  const backend = new PgBackend(pool, owns, options);
  try {
    if (options.migrate ?? true) await migrate(pool, { table: backend.table });
  } catch (e) {
    await backend.close();
    throw e;
  }
  return backend;
}
