// The PostgreSQL backend's statements against a real, throwaway PostgreSQL server: expiry by the
// database's clock, tokens that grow on every take, release woken by NOTIFY and by polling when
// NOTIFY is lost, elections with their predecessor, and both fences (fencedTransaction with a
// lock's tokens; leasedTransaction refusing a holder whose lease ran out). Time bounds only bound
// hangs; nothing here asserts speed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import {
  LeaseNotFoundError,
  type CallOptions,
  type SessionTransport,
} from '../../src/client/index.js';
import { StaleTokenError, createFenceTable, fencedTransaction } from '../../src/fence/index.js';
import {
  LeaseLostError,
  connectPg,
  leasedTransaction,
  migrate,
  type ConnectPgOptions,
  type PgBackend,
  type PgTraceEvent,
} from '../../src/pg/index.js';
import { startPostgres, type PostgresServer } from '../../src/pg/throwaway-server.js';
import { eventually, until } from '../support/poll.js';

let server: PostgresServer;
let pool: pg.Pool;
const backends: PgBackend[] = [];

before(async () => {
  server = await startPostgres({ database: 'pg_backend_test' });
  pool = new pg.Pool({ connectionString: server.url, max: 20 });
  pool.on('error', () => {});
});
after(async () => {
  await Promise.allSettled(backends.map((b) => b.close()));
  await pool?.end();
  await server?.stop();
});

const unique = (label: string): string => `${label}_${randomBytes(4).toString('hex')}`;

async function backend(options: Omit<ConnectPgOptions, 'pool'> = {}): Promise<PgBackend> {
  const b = await connectPg({ pool, table: unique('leases'), ...options });
  backends.push(b);
  return b;
}

/** A transport whose renewals can be held back (a partition of this session alone). */
class BlockableTransport implements SessionTransport {
  blocked = false;
  constructor(private readonly inner: SessionTransport) {}
  grant(ttl: number, o: CallOptions) {
    return this.inner.grant(ttl, o);
  }
  revoke(id: bigint, o: CallOptions) {
    return this.inner.revoke(id, o);
  }
  async keepAliveOnce(id: bigint, o: CallOptions) {
    if (this.blocked) {
      await new Promise((_r, reject) =>
        o.signal?.addEventListener('abort', () => reject(o.signal?.reason as Error)),
      );
    }
    return this.inner.keepAliveOnce(id, o);
  }
}

/** Whether the session row is expired by the database's clock. */
async function expiredInDb(table: string, id: bigint): Promise<boolean> {
  const r = await pool.query<{ gone: boolean }>(
    `SELECT expires_at <= clock_timestamp() AS gone FROM "${table}" WHERE name = $1`,
    [`session/${id}`],
  );
  return r.rows[0]?.gone === true;
}

test('migrate is idempotent', async () => {
  const table = unique('leases');
  await migrate(pool, { table });
  await migrate(pool, { table });
  const r = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}"`);
  assert.equal(r.rows[0]?.n, 0);
});

test('a 2 s session whose renewals are blocked loses its row by the database clock', async () => {
  const b = await backend();
  const transport = new BlockableTransport(b.transport);
  const session = await b.session({ ttlSeconds: 2, transport });
  const other = await b.session({ ttlSeconds: 10 });
  try {
    const grant = await b.lock(session, 'l').acquire();
    transport.blocked = true;
    await eventually(
      'session row expired in the database',
      async () => ((await expiredInDb(b.table, session.leaseId)) ? true : undefined),
      15_000,
    );
    assert.equal(grant.valid(), false, 'the holder knows before the database expired it');
    // The lock passes to another session, with a larger token.
    const next = await b.lock(other, 'l').acquire({ timeoutMs: 15_000 });
    assert.ok(next.token > grant.token);
    // A renewal of the expired row is refused: the session ends with lease-lost.
    await assert.rejects(b.transport.keepAliveOnce(session.leaseId, {}), LeaseNotFoundError);
    transport.blocked = false;
    const t = await session.closed();
    assert.equal(t.to, 'expired');
    assert.equal(await grant.release(), false, 'the fenced release leaves the new holder alone');
    assert.equal(next.valid(), true);
    await next.release();
  } finally {
    await session.close().catch(() => undefined);
    await other.close();
  }
});

test('the token increases on every take, across sessions and expiry', async () => {
  const b = await backend();
  const a = await b.session({ ttlSeconds: 10 });
  const c = await b.session({ ttlSeconds: 10 });
  try {
    const tokens: bigint[] = [];
    for (let i = 0; i < 4; i++) {
      const s = i % 2 === 0 ? a : c;
      const g = await b.lock(s, 'tok').acquire();
      tokens.push(g.token);
      assert.equal(await g.release(), true);
    }
    // A revoked holder's row is taken over with the next token too.
    const g = await b.lock(a, 'tok').acquire();
    tokens.push(g.token);
    await a.close();
    const h = await b.lock(c, 'tok').acquire({ timeoutMs: 10_000 });
    tokens.push(h.token);
    await h.release();
    assert.deepEqual(tokens, [1n, 2n, 3n, 4n, 5n, 6n]);
  } finally {
    await a.close().catch(() => undefined);
    await c.close();
  }
});

/** Bounds a hang of the waiter (its holder's session would live 60 s), in ms. */
const waitedReleaseTimeoutMs = 20_000;

async function waitedRelease(b: PgBackend): Promise<PgTraceEvent[]> {
  const holder = await b.session({ ttlSeconds: 60 });
  const waiter = await b.session({ ttlSeconds: 60 });
  const events: PgTraceEvent[] = [];
  try {
    const g = await b.lock(holder, 'n').acquire();
    const pending = b
      .lock(waiter, 'n', { trace: (e) => events.push(e) })
      .acquire({ timeoutMs: waitedReleaseTimeoutMs });
    await until('waiter saw the lock held', () => events.some((e) => e.type === 'held'));
    await g.release();
    const got = await pending;
    assert.ok(got.token > g.token);
    await got.release();
    return events;
  } finally {
    await holder.close();
    await waiter.close();
  }
}

test('a released lock is taken at once: the waiter is woken by NOTIFY', async () => {
  // A poll interval no test run reaches: only a notification can wake the waiter in time.
  const b = await backend({ pollIntervalMs: 600_000 });
  await b.listen();
  const events = await waitedRelease(b);
  assert.deepEqual(
    events.filter((e) => e.type === 'woken').map((e) => (e.type === 'woken' ? e.by : '')),
    ['notify'],
  );
  assert.ok(b.notificationsReceived >= 1);
});

test('with NOTIFY lost (no LISTEN), the waiter wakes by polling', async () => {
  const b = await backend({ pollIntervalMs: 200, listen: false });
  const events = await waitedRelease(b);
  const woken = events.filter((e) => e.type === 'woken');
  assert.ok(woken.length >= 1);
  assert.ok(woken.every((e) => e.type === 'woken' && e.by === 'poll'));
  assert.equal(b.notificationsReceived, 0);
});

test('tryAcquire does not wait; one session cannot take one lock twice', async () => {
  const b = await backend();
  const a = await b.session({ ttlSeconds: 10 });
  const c = await b.session({ ttlSeconds: 10 });
  try {
    const g = await b.lock(a, 't').acquire();
    assert.equal(await b.lock(c, 't').tryAcquire(), undefined);
    await assert.rejects(b.lock(a, 't').tryAcquire(), { code: 'ALREADY_QUEUED' });
    await g.release();
    const h = await b.lock(c, 't').tryAcquire();
    assert.ok(h !== undefined && h.token > g.token);
    await h.release();
  } finally {
    await a.close();
    await c.close();
  }
});

test('election: campaign learns its predecessor; observe reports leaders and null', async () => {
  const b = await backend({ pollIntervalMs: 200 });
  const a = await b.session({ ttlSeconds: 10 });
  const c = await b.session({ ttlSeconds: 10 });
  const seen: Array<string | null> = [];
  const observer = b.observe('e', {});
  const watching = (async () => {
    for await (const l of observer) seen.push(l === null ? null : l.value.toString());
  })();
  try {
    const t1 = await b.campaign('e', a, Buffer.from('a'), {});
    assert.equal(t1.previous, null);
    assert.equal(await b.recordLeader('e', t1, Buffer.from('a'), {}), true);
    await until('observer sees a', () => seen.includes('a'));
    const second = b.campaign('e', c, Buffer.from('c'), {});
    assert.equal(await t1.resign(), true);
    const t2 = await second;
    assert.equal(t2.previous?.value.toString(), 'a');
    assert.equal(t2.previous?.token, t1.token);
    assert.ok(t2.token > t1.token);
    await until('observer sees c', () => seen.includes('c'));
    await t2.resign();
    await until('observer sees no leader', () => seen.at(-1) === null);
    assert.equal(await b.election('e').leader(), null);
  } finally {
    await observer.close();
    await watching;
    await a.close();
    await c.close();
  }
});

test('fencedTransaction refuses a stale PgLock token', async () => {
  const b = await backend();
  const fence = unique('fence');
  await createFenceTable(pool, { table: fence });
  const a = await b.session({ ttlSeconds: 10 });
  const c = await b.session({ ttlSeconds: 10 });
  try {
    const old = await b.lock(a, 'f').acquire();
    await old.release();
    const cur = await b.lock(c, 'f').acquire();
    await fencedTransaction(pool, { scope: 'f', token: cur.token, table: fence }, () =>
      Promise.resolve(1),
    );
    await assert.rejects(
      fencedTransaction(pool, { scope: 'f', token: old.token, table: fence }, () =>
        Promise.resolve(1),
      ),
      StaleTokenError,
    );
    await cur.release();
  } finally {
    await a.close();
    await c.close();
  }
});

test('leasedTransaction: a holder whose lease ran out cannot write; a valid one can', async () => {
  const b = await backend();
  const data = unique('data');
  await pool.query(`CREATE TABLE "${data}" (v text)`);
  const transport = new BlockableTransport(b.transport);
  const paused = await b.session({ ttlSeconds: 2, transport });
  const live = await b.session({ ttlSeconds: 10 });
  try {
    const grant = await b.lock(paused, 'w').acquire();
    await leasedTransaction(pool, grant, (db) => db.query(`INSERT INTO "${data}" VALUES ('ok')`), {
      table: b.table,
    });
    // The holder stops renewing (as if paused) and its row expires by the database's clock,
    // before anyone else takes the lock: only the database's check can refuse the write.
    transport.blocked = true;
    await eventually(
      'row expired',
      async () => ((await expiredInDb(b.table, paused.leaseId)) ? true : undefined),
      15_000,
    );
    await assert.rejects(
      leasedTransaction(pool, grant, (db) => db.query(`INSERT INTO "${data}" VALUES ('zombie')`), {
        table: b.table,
      }),
      LeaseLostError,
    );
    // Expiry in the middle of the transaction: checked again before COMMIT.
    const g2 = await b.lock(live, 'w2').acquire();
    const t2 = new BlockableTransport(b.transport);
    const s3 = await b.session({ ttlSeconds: 2, transport: t2 });
    const g3 = await b.lock(s3, 'w3').acquire();
    t2.blocked = true;
    await assert.rejects(
      leasedTransaction(
        pool,
        g3,
        async (db) => {
          await db.query(`INSERT INTO "${data}" VALUES ('late')`);
          await eventually(
            'row expired',
            async () => ((await expiredInDb(b.table, s3.leaseId)) ? true : undefined),
            15_000,
          );
        },
        { table: b.table },
      ),
      LeaseLostError,
    );
    await s3.close().catch(() => undefined);
    await g2.release();
    const rows = await pool.query(`SELECT v FROM "${data}" ORDER BY v`);
    assert.deepEqual(
      rows.rows.map((r: { v: string }) => r.v),
      ['ok'],
      'nothing written by an expired holder',
    );
  } finally {
    await paused.close().catch(() => undefined);
    await live.close();
  }
});

test('a take waits for an in-flight renewal of the holder and honours it', async () => {
  const b = await backend();
  const transport = new BlockableTransport(b.transport);
  const holder = await b.session({ ttlSeconds: 2, transport });
  const taker = await b.session({ ttlSeconds: 10 });
  // The session's own renewals are held back; this transaction is the renewal, in flight.
  transport.blocked = true;
  const renewal = await pool.connect();
  try {
    const grant = await b.lock(holder, 'race').acquire();
    await renewal.query('BEGIN');
    const renewed = await renewal.query(
      `UPDATE "${b.table}" SET expires_at = clock_timestamp() + interval '30 s'
       WHERE name = $1 AND expires_at > clock_timestamp()`,
      [`session/${holder.leaseId}`],
    );
    assert.equal(renewed.rowCount, 1, 'the renewal was granted before the old expiry');
    // By the committed row, the holder has now expired: a take that judged the snapshot would
    // take the lock while the renewal, granted in time, is about to commit.
    await eventually(
      'old expiry passed',
      async () => ((await expiredInDb(b.table, holder.leaseId)) ? true : undefined),
      15_000,
    );
    const take = b.lock(taker, 'race').tryAcquire();
    let settled = false;
    void take.then(
      () => (settled = true),
      () => (settled = true),
    );
    await eventually('the take waits on the renewal, or settles', async () => {
      if (settled) return true;
      const r = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%'`,
      );
      return (r.rows[0]?.n ?? 0) > 0 ? true : undefined;
    });
    assert.equal(settled, false, 'the take did not wait for the in-flight renewal');
    await renewal.query('COMMIT');
    assert.equal(await take, undefined, 'the renewed holder keeps the lock');
    await grant.release();
  } finally {
    renewal.release();
    await holder.close().catch(() => undefined);
    await taker.close();
  }
});

test('close() ends waits and the LISTEN connection, not the caller pool', async () => {
  const b = await connectPg({ pool, table: unique('leases') });
  const holder = await b.session({ ttlSeconds: 10 });
  const waiter = await b.session({ ttlSeconds: 10 });
  try {
    const g = await b.lock(holder, 'c').acquire();
    const events: PgTraceEvent[] = [];
    const pending = b
      .lock(waiter, 'c', { trace: (e) => events.push(e) })
      .acquire({ timeoutMs: 20_000 });
    const outcome = pending.then(
      () => 'granted',
      (e: unknown) => (e as { code?: string }).code,
    );
    await until('waiter saw the lock held', () => events.some((e) => e.type === 'held'));
    await b.close();
    assert.equal(b.closingSignal.aborted, true);
    assert.equal(await outcome, 'CLIENT_CLOSED');
    await assert.rejects(b.session({}), { code: 'CLIENT_CLOSED' });
    // The caller's pool still serves, and the holder's release still works on it.
    assert.equal(await g.release(), true);
    assert.equal((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one, 1);
  } finally {
    await holder.close();
    await waiter.close();
  }
});

test('previous is the last leader recorded: a winner that never started is skipped', async () => {
  const b = await backend({ pollIntervalMs: 200 });
  const sessions = [
    await b.session({ ttlSeconds: 10 }),
    await b.session({ ttlSeconds: 10 }),
    await b.session({ ttlSeconds: 10 }),
  ] as const;
  try {
    const t1 = await b.campaign('r', sessions[0], Buffer.from('a'), {});
    assert.equal(await b.recordLeader('r', t1, Buffer.from('a pid 1'), {}), true);
    await t1.resign();
    // A winner whose fence failed resigns without recording itself.
    const t2 = await b.campaign('r', sessions[1], Buffer.from('b'), {});
    assert.equal(t2.previous?.value.toString(), 'a pid 1');
    await t2.resign();
    // Recording is fenced on the term: a resigned term cannot record itself.
    assert.equal(await b.recordLeader('r', t2, Buffer.from('b'), {}), false);
    const t3 = await b.campaign('r', sessions[2], Buffer.from('c'), {});
    assert.equal(t3.previous?.value.toString(), 'a pid 1');
    assert.equal(t3.previous?.token, t1.token);
    assert.ok(t3.token > t2.token && t2.token > t1.token);
    await t3.resign();
  } finally {
    for (const s of sessions) await s.close();
  }
});

test('proclaim is fenced on the term: it changes the value only while leading', async () => {
  const b = await backend({ pollIntervalMs: 200 });
  const a = await b.session({ ttlSeconds: 10 });
  const c = await b.session({ ttlSeconds: 10 });
  try {
    const e = b.election('p');
    const t1 = await e.campaign(a, Buffer.from('v1'));
    await t1.proclaim(Buffer.from('v2'));
    assert.equal((await e.leader())?.value.toString(), 'v2');
    await t1.resign();
    const t2 = await e.campaign(c, Buffer.from('w'));
    await assert.rejects(t1.proclaim(Buffer.from('zombie')), { name: 'RecipeError' });
    assert.equal((await e.leader())?.value.toString(), 'w');
    await t2.resign();
  } finally {
    await a.close();
    await c.close();
  }
});
