// The PostgreSQL fence against a real, throwaway PostgreSQL server (postgres-server.ts): the
// contract suite, the transaction's all-or-nothing behaviour, the idempotency store, and a race of
// eight writers at READ COMMITTED that the fence survives and a deliberately unfenced variant
// (check, then write) does not — proof that the test can see the problem it guards against.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { prng, type Prng } from '../../src/core/base/index.js';
import {
  InvalidScopeError,
  PostgresFence,
  PostgresIdempotencyStore,
  StaleTokenError,
  createFenceTable,
  fencedTransaction,
  type PgClient,
} from '../../src/fence/index.js';
import { fenceContract, tokenCounter, type ContractSubject } from './contract-suite.js';
import { idempotencyContract } from './idempotency-suite.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';

let server: PostgresServer;
const pools: pg.Pool[] = [];
function newPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: server.url, max: 10 });
  // An idle client whose connection dies (the server stopping) reports it here; without a
  // listener that would be an uncaught 'error' event.
  pool.on('error', () => {});
  pools.push(pool);
  return pool;
}

before(async () => {
  server = await startPostgres();
});
after(async () => {
  await Promise.allSettled(pools.map((p) => p.end()));
  await server?.stop();
});

const uniqueName = (label: string): string => `${label}_${randomBytes(4).toString('hex')}`;

async function postgresSubject(
  names = { fence: uniqueName('fence'), log: uniqueName('log') },
  issue = tokenCounter(),
): Promise<ContractSubject> {
  const pool = newPool();
  const fence = new PostgresFence(pool, { table: names.fence });
  await fence.createTable();
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${names.log} (id bigserial PRIMARY KEY, scope text, value text)`,
  );
  return {
    issue,
    append: (scope, token, value) =>
      fence.write(scope, token, async (c) => {
        await c.query(`INSERT INTO ${names.log} (scope, value) VALUES ($1, $2)`, [scope, value]);
      }),
    log: async (scope) =>
      (
        await pool.query(`SELECT value FROM ${names.log} WHERE scope = $1 ORDER BY id`, [scope])
      ).rows.map((r: { value: string }) => r.value),
    current: (scope) => fence.current(scope),
    // A restart: a new pool and a new adapter over the same tables.
    reopen: () => postgresSubject(names, issue),
    close: () => Promise.resolve(),
  };
}

fenceContract('postgres', () => postgresSubject(), { durable: true });

describe('fencedTransaction', () => {
  test('commits the caller SQL and the mark together', async () => {
    const pool = newPool();
    const table = uniqueName('fence');
    await createFenceTable(pool, { table });
    await createFenceTable(pool, { table }); // idempotent
    await pool.query('CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY, state text)');
    await pool.query(`INSERT INTO jobs VALUES (1, 'new') ON CONFLICT DO NOTHING`);
    const out = await fencedTransaction(pool, { scope: 'jobs', token: 5n, table }, async (c) => {
      await c.query(`UPDATE jobs SET state = 'done-by-5' WHERE id = 1`);
      return 'ok';
    });
    assert.equal(out, 'ok');
    assert.equal(
      (await pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = 1')).rows[0]?.state,
      'done-by-5',
    );
    assert.equal(await new PostgresFence(pool, { table }).current('jobs'), 5n);
  });

  test('a stale token rolls back before the caller SQL runs', async () => {
    const pool = newPool();
    const table = uniqueName('fence');
    await createFenceTable(pool, { table });
    await fencedTransaction(pool, { scope: 's', token: 9n, table }, () =>
      Promise.resolve(undefined),
    );
    let ran = false;
    await assert.rejects(
      fencedTransaction(pool, { scope: 's', token: 8n, table }, () => {
        ran = true;
        return Promise.resolve();
      }),
      (e: unknown) =>
        e instanceof StaleTokenError && e.presented === 8n && e.current === 9n && e.scope === 's',
    );
    assert.equal(ran, false);
  });

  test('an error in the caller SQL rolls back its writes and the raised mark', async () => {
    const pool = newPool();
    const table = uniqueName('fence');
    const data = uniqueName('data');
    await createFenceTable(pool, { table });
    await pool.query(`CREATE TABLE ${data} (v text)`);
    await fencedTransaction(pool, { scope: 's', token: 1n, table }, () =>
      Promise.resolve(undefined),
    );
    await assert.rejects(
      fencedTransaction(pool, { scope: 's', token: 2n, table }, async (c) => {
        await c.query(`INSERT INTO ${data} VALUES ('half')`);
        throw new Error('caller failed');
      }),
      /caller failed/,
    );
    assert.equal(
      (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${data}`)).rows[0]?.n,
      0,
    );
    assert.equal(await new PostgresFence(pool, { table }).current('s'), 1n);
    // The pool's connections are still usable (each was released after ROLLBACK).
    assert.equal((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one, 1);
  });

  test('schema-qualified tables work; names that are not identifiers are refused', async () => {
    const pool = newPool();
    const schema = uniqueName('app');
    await pool.query(`CREATE SCHEMA ${schema}`);
    await createFenceTable(pool, { table: `${schema}.fence` });
    await fencedTransaction(pool, { scope: 's', token: 3n, table: `${schema}.fence` }, () =>
      Promise.resolve(),
    );
    for (const bad of ['fence; DROP TABLE x', 'a.b.c', '"q"', '']) {
      assert.throws(() => new PostgresFence(pool, { table: bad }), InvalidScopeError, bad);
    }
  });
});

// --- The race: eight writers, random tokens, READ COMMITTED ------------------------------------

interface Race {
  /** Log entries (token per accepted write) in commit order. */
  readonly log: readonly bigint[];
  readonly accepted: readonly bigint[];
  readonly mark: bigint;
}

/** What a correct fence guarantees, as a list of violations (empty = fine). */
function violations(race: Race): string[] {
  const out: string[] = [];
  for (let i = 1; i < race.log.length; i++) {
    const [prev, next] = [race.log[i - 1] ?? 0n, race.log[i] ?? 0n];
    if (next < prev) out.push(`token ${next} landed after ${prev}`);
  }
  const max = race.accepted.reduce((m, t) => (t > m ? t : m), 0n);
  if (race.mark !== max) out.push(`final mark ${race.mark} != max accepted ${max}`);
  return out;
}

/** `n` distinct random tokens whose order is not sorted (so an inversion is possible). */
function raceTokens(rng: Prng, n: number): bigint[] {
  const set = new Set<bigint>();
  while (set.size < n) set.add(BigInt(rng.int(1, 1_000_000)));
  const tokens = [...set];
  if (tokens.every((t, i) => i === 0 || t >= (tokens[i - 1] ?? 0n))) tokens.reverse();
  return tokens;
}

/**
 * A schedule without sleeping: callers pass `turn(who)` one at a time in `order`; the next one is
 * let through when the current one calls `done()`.
 */
function turnstile(order: readonly number[]): { turn(who: number): Promise<void>; done(): void } {
  const waiting = new Map<number, () => void>();
  let next = 0;
  let busy = false;
  const advance = (): void => {
    const w = order[next];
    const go = w === undefined ? undefined : waiting.get(w);
    if (busy || w === undefined || go === undefined) return;
    waiting.delete(w);
    busy = true;
    next++;
    go();
  };
  return {
    turn: (who) =>
      new Promise<void>((resolve) => {
        waiting.set(who, resolve);
        advance();
      }),
    done: () => {
      busy = false;
      advance();
    },
  };
}

type Writer = (token: bigint, log: (c: PgClient) => Promise<void>) => Promise<void>;

async function race(
  writer: (scope: string, table: string, pool: pg.Pool) => Writer,
  tokens: readonly bigint[],
  schedule: ReturnType<typeof turnstile> | undefined,
): Promise<Race> {
  const pool = new pg.Pool({ connectionString: server.url, max: tokens.length + 2 });
  try {
    return await raceOn(pool, writer, tokens, schedule);
  } finally {
    await pool.end();
  }
}

async function raceOn(
  pool: pg.Pool,
  writer: (scope: string, table: string, pool: pg.Pool) => Writer,
  tokens: readonly bigint[],
  schedule: ReturnType<typeof turnstile> | undefined,
): Promise<Race> {
  const table = uniqueName('fence');
  const logTable = uniqueName('racelog');
  await createFenceTable(pool, { table });
  await pool.query(`CREATE TABLE ${logTable} (id bigserial PRIMARY KEY, token bigint)`);
  const write = writer('race', table, pool);
  const accepted: bigint[] = [];
  await Promise.all(
    tokens.map(async (token, who) => {
      if (schedule !== undefined) await schedule.turn(who);
      try {
        await write(token, async (c) => {
          await c.query(`INSERT INTO ${logTable} (token) VALUES ($1)`, [token.toString()]);
        });
        accepted.push(token);
      } catch (e) {
        if (!(e instanceof StaleTokenError)) throw e;
      } finally {
        schedule?.done();
      }
    }),
  );
  const rows = await pool.query(`SELECT token FROM ${logTable} ORDER BY id`);
  const mark = await new PostgresFence(pool, { table }).current('race');
  return {
    log: rows.rows.map((r: { token: string }) => BigInt(r.token)),
    accepted,
    mark: mark ?? 0n,
  };
}

/** The fence under test. */
const fenced =
  (scope: string, table: string, pool: pg.Pool): Writer =>
  (token, log) =>
    fencedTransaction(pool, { scope, token, table }, log);

/**
 * The classic mistake, kept to prove the test can see it: read the mark, compare in the
 * application, then write — two statements, nothing held between them. `checked` is where a
 * real writer would be descheduled; the test's schedule parks every writer there.
 */
const unfenced =
  (checked: (token: bigint) => Promise<void>, written: () => void) =>
  (scope: string, table: string, pool: pg.Pool): Writer =>
  async (token, log) => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const r = await c.query(`SELECT token FROM ${table} WHERE scope = $1`, [scope]);
      const mark =
        r.rows[0] === undefined ? undefined : BigInt((r.rows[0] as { token: string }).token);
      if (mark !== undefined && token < mark) {
        await c.query('ROLLBACK');
        throw new StaleTokenError(scope, token, mark);
      }
      await checked(token);
      await log(c);
      await c.query(
        `INSERT INTO ${table} (scope, token) VALUES ($1, $2)
         ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token`,
        [scope, token.toString()],
      );
      await c.query('COMMIT');
      written();
    } finally {
      c.release();
    }
  };

describe('eight writers at READ COMMITTED', () => {
  const seed = Math.floor(Math.random() * 2 ** 31);
  const rng = prng(seed);

  test('the fence keeps the order under free concurrency (several rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const tokens = raceTokens(rng, 8);
      const r = await race(fenced, tokens, undefined);
      assert.deepEqual(violations(r), [], `seed ${seed} round ${round}: ${tokens.join(',')}`);
      assert.ok(r.accepted.length >= 1);
    }
  });

  test('the fence refuses every late lower token under a schedule with inversions', async () => {
    const tokens = raceTokens(rng, 8);
    // The writers run one after another in an order with lower tokens after higher ones.
    const r = await race(fenced, tokens, turnstile(tokens.map((_, i) => i)));
    assert.deepEqual(violations(r), [], `seed ${seed}: ${tokens.join(',')}`);
    // Exactly the writers that were not preceded by a higher token got through.
    let max = 0n;
    const expected = tokens.filter((t) => (t >= max ? ((max = t), true) : false));
    assert.deepEqual(r.log, expected);
  });

  test('the unfenced variant, under the same kind of schedule, is caught', async () => {
    const tokens = raceTokens(rng, 8);
    // Every writer passes its check before any writes (the barrier), then they write one after
    // another in the same order as above: the interleaving a descheduled writer produces.
    let arrived = 0;
    let openBarrier!: () => void;
    const barrier = new Promise<void>((r) => (openBarrier = r));
    const schedule = turnstile(tokens.map((_, i) => i));
    const checked = async (token: bigint): Promise<void> => {
      if (++arrived === tokens.length) openBarrier();
      await barrier;
      await schedule.turn(tokens.indexOf(token));
    };
    const r = await race(
      unfenced(checked, () => schedule.done()),
      tokens,
      undefined,
    );
    const found = violations(r);
    assert.ok(
      found.length > 0,
      `seed ${seed}: the unfenced variant should have let a lower token land after a higher one`,
    );
    assert.equal(r.accepted.length, tokens.length, 'every unfenced writer passed its stale check');
  });
});

idempotencyContract('postgres', async () => {
  const store = new PostgresIdempotencyStore(newPool(), { table: uniqueName('idem') });
  await store.createTable();
  return { store, close: () => Promise.resolve() };
});
