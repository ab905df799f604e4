// LeaderElector on the PostgreSQL backend (an ElectorBackend): two electors with their own pools
// on one table. A leader whose callback awaits a promise that never settles and never calls
// progress() is STUCK: its signal aborts, its session row stops being renewed and expires by the
// database clock, it does not resign, and the other elector leads with a larger token — after its
// fencePrevious hook was given the stuck leader's recorded value and token. A fence that fails
// keeps the new term from starting, and the next winner is asked to fence the same previous
// leader. handOff is UNSUPPORTED. Time bounds only bound hangs; nothing here asserts speed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  LeaderElector,
  RecipeError,
  type PreviousLeader,
  type RecipeTraceEvent,
} from '../../src/client/index.js';
import { connectPg, type PgBackend } from '../../src/pg/index.js';
import { startPostgres, type PostgresServer } from '../../src/pg/throwaway-server.js';
import { eventually, until } from '../support/poll.js';

// Named limits.
const ttlSeconds = 2;
const progressDeadlineMs = 1_000;
/** Bound on a takeover (deadline, TTL, poll), a hang guard only. */
const takeoverBoundMs = 30_000;

let server: PostgresServer;
const backends: PgBackend[] = [];

before(async () => {
  server = await startPostgres({ database: 'pg_elector_test' });
});
after(async () => {
  await Promise.allSettled(backends.map((b) => b.close()));
  await server?.stop();
});

async function backend(table: string): Promise<PgBackend> {
  const b = await connectPg({ connectionString: server.url, table, pollIntervalMs: 200 });
  backends.push(b);
  return b;
}

function isCode(e: unknown, code: string): boolean {
  return e instanceof RecipeError && e.code === code;
}

test('pg: a stuck leader loses its lease; the next fences it first and leads', async () => {
  const [pa, pb] = [await backend('elect_stuck'), await backend('elect_stuck')];
  let settleHang!: () => void;
  const hang = new Promise<void>((r) => (settleHang = r));
  const errorsA: unknown[] = [];
  const traceA: RecipeTraceEvent[] = [];
  let aTerm: { signal: AbortSignal; token: bigint } | undefined;
  const a = new LeaderElector(pa, {
    name: 'svc',
    identity: 'a pid 101',
    ttlSeconds,
    progressDeadlineMs,
    retryIntervalMs: 100,
    trace: (e) => traceA.push(e),
    onError: (e) => errorsA.push(e),
    onStartedLeading: async ({ signal, token }) => {
      aTerm = { signal, token };
      await hang; // stuck: never settles, never calls progress()
    },
  }).start();
  const fenced: PreviousLeader[] = [];
  let failFence = true;
  const errorsB: unknown[] = [];
  let bToken: bigint | undefined;
  let bStartedAfterFence = false;
  const b = new LeaderElector(pb, {
    name: 'svc',
    identity: 'b',
    ttlSeconds,
    retryIntervalMs: 100,
    onError: (e) => errorsB.push(e),
    fencePrevious: ({ previous }) => {
      fenced.push(previous);
      if (!failFence) return Promise.resolve();
      failFence = false;
      return Promise.reject(new Error('the power switch did not answer'));
    },
    onStartedLeading: ({ token }) => {
      bToken = token;
      bStartedAfterFence = fenced.length === 2;
    },
  });
  try {
    await until('a leads', () => aTerm !== undefined, takeoverBoundMs);
    b.start();
    await until('a is declared stuck', () => aTerm?.signal.aborted === true, takeoverBoundMs);
    assert.ok(isCode(aTerm?.signal.reason, 'STUCK'), String(aTerm?.signal.reason));
    assert.ok(traceA.some((e) => e.type === 'stuck'));
    await until('b leads', () => bToken !== undefined, takeoverBoundMs);
    assert.ok(bToken! > aTerm!.token, `b's token ${bToken} must exceed a's ${aTerm!.token}`);
    // The first fence failed: that term never started and was never recorded, so the next
    // winner was asked to fence a again, and started only after that fence succeeded.
    assert.ok(
      errorsB.some((e) => isCode(e, 'FENCE_FAILED')),
      'a FENCE_FAILED was reported',
    );
    assert.equal(fenced.length, 2);
    for (const p of fenced) {
      assert.equal(p.value.toString(), 'a pid 101');
      assert.equal(p.token, aTerm!.token);
    }
    assert.ok(bStartedAfterFence);
    // a never resigned while stuck: its elector still waits for its callback.
    assert.equal(a.isLeader, false);
    const leader = await eventually(
      'the leader row names b',
      async () => {
        const l = await pb.election('svc').leader();
        return l?.value.toString() === 'b' ? l : undefined;
      },
      takeoverBoundMs,
    );
    assert.equal(leader.token, bToken);
    await assert.rejects(b.handOff('a'), (e) => isCode(e, 'UNSUPPORTED'));
    // A shutdown cannot wait for a stuck callback for ever: stop() with a bound gives up.
    assert.equal(await a.stop({ timeoutMs: 200 }), false);
    settleHang();
    assert.equal(await a.stop(), true, 'once the callback settled, stop() completes');
  } finally {
    settleHang();
    await Promise.allSettled([a.stop(), b.stop()]);
  }
  assert.ok(
    errorsA.some((e) => isCode(e, 'STUCK')),
    'the stuck verdict reached onError',
  );
});

test('pg: a stuck PgLock.run holder loses the row by expiry; a waiter takes it', async () => {
  const [pa, pb] = [await backend('lock_stuck'), await backend('lock_stuck')];
  const sa = await pa.session({ ttlSeconds });
  const sb = await pb.session({ ttlSeconds });
  let settleHang!: () => void;
  const hang = new Promise<void>((r) => (settleHang = r));
  let held: { signal: AbortSignal; token: bigint } | undefined;
  let released: boolean | undefined;
  const running = pa
    .lock(sa, 'job')
    .run(
      async ({ signal, token, grant }) => {
        held = { signal, token };
        await hang;
        released = grant.valid();
      },
      { progressDeadlineMs },
    )
    .catch(() => undefined);
  try {
    await until('a holds', () => held !== undefined, takeoverBoundMs);
    const g = await pb.lock(sb, 'job').acquire({ timeoutMs: takeoverBoundMs });
    assert.ok(isCode(held?.signal.reason, 'STUCK'), String(held?.signal.reason));
    assert.ok(g.token > held!.token);
    // The stuck section never released: the row passed only when a's session row expired.
    assert.equal(sa.valid(), false);
    await g.release();
  } finally {
    settleHang();
    await running;
    await Promise.allSettled([sa.close(), sb.close()]);
  }
  assert.equal(released, false, 'the section learned at the end that it no longer held');
});
