// Interleavings of the PostgreSQL backend's statements that random load reaches rarely, forced
// here with raw connections and open transactions (the statements are the backend's own, from
// statements()): (1) a take that waited on the lock row behind a release must not take it over
// from a session granted after the take began; (2) a take must wait for a holder's open
// leasedTransaction check, so the holder's writes commit before any next token. Both failed on
// the first versions of the SQL. Time bounds only bound hangs; nothing here asserts speed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/pg/index.js';
import { statements } from '../../src/pg/sql.js';
import { startPostgres, type PostgresServer } from '../../src/pg/throwaway-server.js';
import { sleep } from '../support/poll.js';

// Named limits.
/** Trials of the release/take/take interleaving (the old SQL failed about 2 in 5). */
const trials = 12;
/** Time given to a statement to reach its row lock and block there, in ms. */
const blockMs = 40;

let server: PostgresServer;
const clients: pg.Client[] = [];

before(async () => {
  server = await startPostgres({ database: 'pg_races_test' });
});
after(async () => {
  await Promise.allSettled(clients.map((c) => c.end()));
  await server?.stop();
});

async function connection(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

/** A column of a result's first row, as text (undefined when there is no row). */
function first(r: pg.QueryResult, column: string): string | undefined {
  const v = (r.rows[0] as Record<string, unknown> | undefined)?.[column];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

async function table(name: string): Promise<ReturnType<typeof statements>> {
  const pool = new pg.Pool({ connectionString: server.url, max: 1 });
  try {
    await migrate(pool, { table: name });
  } finally {
    await pool.end();
  }
  return statements(name);
}

test('a take blocked behind a release does not take the row from a newer session', async () => {
  const sql = await table('races_newer');
  const [releaser, takerC, takerB, g] = [
    await connection(),
    await connection(),
    await connection(),
    await connection(),
  ];
  const grant = async (): Promise<string> =>
    String(first(await g.query(sql.grant, [60_000]), 'session_id'));
  const a = await grant();
  const c = await grant();
  await g.query(sql.take, ['lock/x', a, null, sql.channel]);
  let doubles = 0;
  for (let i = 0; i < trials; i++) {
    // a holds again (a test shortcut: the row's holder is set directly).
    await g.query(`UPDATE races_newer SET session_id = $1 WHERE name = 'lock/x'`, [a]);
    const token = String(
      first(await g.query(`SELECT token FROM races_newer WHERE name = 'lock/x'`), 'token'),
    );
    // a's release is in flight (uncommitted): c's take starts (its snapshot is taken) and
    // blocks on the row; b is granted after that snapshot and its take blocks too.
    await releaser.query('BEGIN');
    await releaser.query(sql.release, ['lock/x', a, token, sql.channel]);
    const tc = takerC.query(sql.take, ['lock/x', c, null, sql.channel]);
    await sleep(blockMs);
    const b = await grant();
    const tb = takerB.query(sql.take, ['lock/x', b, null, sql.channel]);
    await sleep(blockMs);
    await releaser.query('COMMIT');
    const [rc, rb] = await Promise.all([tc, tb]);
    const got = [first(rc, 'token'), first(rb, 'token')].filter((t) => t !== undefined);
    if (got.length > 1) doubles++;
  }
  assert.equal(doubles, 0, `${doubles} of ${trials} trials granted the row to two sessions`);
});

test('a take waits for the holder’s open lease check; the old writes commit first', async () => {
  const sql = await table('races_check');
  const [holder, taker, g] = [await connection(), await connection(), await connection()];
  const grant = async (): Promise<string> =>
    String(first(await g.query(sql.grant, [60_000]), 'session_id'));
  const a = await grant();
  const c = await grant();
  const tokenA = String(first(await g.query(sql.take, ['lock/x', a, null, sql.channel]), 'token'));
  await holder.query('BEGIN');
  assert.equal((await holder.query(sql.checkHeld, ['lock/x', a, tokenA])).rowCount, 1);
  // a's session runs out while its transaction is open; c tries to take the row.
  await g.query(
    `UPDATE races_check SET expires_at = clock_timestamp() - interval '1 s' WHERE name = $1`,
    [`session/${a}`],
  );
  const order: string[] = [];
  const took = taker
    .query(sql.take, ['lock/x', c, null, sql.channel])
    .then((r) => order.push(`take ${first(r, 'token')}`));
  await sleep(4 * blockMs);
  order.push('commit a');
  await holder.query('COMMIT');
  await took;
  assert.deepEqual(order, ['commit a', `take ${BigInt(tokenA) + 1n}`]);
});
