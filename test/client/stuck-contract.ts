// Stuck holders (progressDeadlineMs; docs/stuck-leaders.md) against a real 3-member cluster
// (stuck-tenure.test.ts, stuck-etcd.test.ts): a leader or lock holder whose callback awaits a
// promise that never settles and never calls progress() is declared STUCK within the deadline,
// its lease is not renewed (its key disappears on the server after the TTL), nobody resigns or
// releases for it, and a candidate on another client takes over with a larger token; one that
// calls progress() keeps its hold past several deadlines. Time bounds only bound hangs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  LeaderElector,
  Lock,
  RecipeError,
  connect,
  type Client,
  type RecipeTraceEvent,
} from '../../src/client/index.js';
import { startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import { eventually, sleep, until } from '../support/poll.js';

// Named limits.
const ttlSeconds = 2;
const progressDeadlineMs = 1_000;
/** How often a healthy holder reports progress, in ms. */
const beatIntervalMs = 200;
/** Beats that span several deadlines (the point of the healthy case). */
const beatsSpanningDeadlines = (4 * progressDeadlineMs) / beatIntervalMs;
/** Bound on a takeover (TTL, jeopardy, campaign), a hang guard only. */
const takeoverBoundMs = 30_000;

/** A promise that settles only when the test says so (at cleanup). */
function never(): { promise: Promise<void>; settle: () => void } {
  let settle!: () => void;
  const promise = new Promise<void>((r) => (settle = r));
  return { promise, settle };
}

function isStuck(e: unknown): boolean {
  return e instanceof RecipeError && e.code === 'STUCK';
}

export function stuckContract(kind: BackendKind): void {
  let cluster: Cluster;
  let probe: Client;
  const keyGone = (key: string): Promise<true> =>
    eventually(
      `${key} gone on the server`,
      async () => ((await probe.kv.get(key)) === undefined ? true : undefined),
      takeoverBoundMs,
    );

  before(async () => {
    cluster = await startCluster({ kind, size: 3 });
    probe = await connect({ endpoints: cluster.endpoints });
  });

  after(async () => {
    await probe?.close();
    await cluster?.stop();
  });

  test(`${kind}: a stuck leader's lease runs out (no resign); another leads`, async () => {
    const name = 'stuck/elector';
    const [c1, c2] = await Promise.all([1, 2].map(() => connect({ endpoints: cluster.endpoints })));
    const hang = never();
    const traceA: RecipeTraceEvent[] = [];
    const errorsA: unknown[] = [];
    let a1: { signal: AbortSignal; token: bigint; key: string } | undefined;
    let starts = 0;
    let bToken: bigint | undefined;
    const a = new LeaderElector(c1!, {
      name,
      identity: 'a',
      ttlSeconds,
      progressDeadlineMs,
      retryIntervalMs: 100,
      trace: (e) => traceA.push(e),
      onError: (e) => errorsA.push(e),
      onStartedLeading: async ({ signal, token, leadership }) => {
        starts++;
        a1 = { signal, token, key: leadership?.key ?? '' };
        await hang.promise; // never calls progress()
      },
    });
    const b = new LeaderElector(c2!, {
      name,
      identity: 'b',
      ttlSeconds,
      onStartedLeading: ({ token }) => void (bToken = token),
    });
    try {
      a.start();
      await until('a leads', () => a1 !== undefined);
      b.start();
      await until('a is stuck', () => a1?.signal.aborted === true, takeoverBoundMs);
      assert.ok(isStuck(a1?.signal.reason), `reason ${String(a1?.signal.reason)}`);
      assert.ok(errorsA.some(isStuck), 'onError saw STUCK');
      assert.ok(traceA.some((e) => e.type === 'stuck' && e.deadlineMs === progressDeadlineMs));
      await keyGone(a1?.key ?? '');
      await until('b leads', () => bToken !== undefined, takeoverBoundMs);
      assert.ok((bToken ?? 0n) > (a1?.token ?? 0n), `b's ${bToken} > a's ${a1?.token}`);
      // Nobody resigned for the stuck callback, and a did not campaign again.
      assert.equal(traceA.filter((e) => e.type === 'released').length, 0);
      assert.equal(traceA.filter((e) => e.type === 'queued').length, 1);
      assert.equal(starts, 1);
      // Once the callback settles, a ends its term and campaigns again (behind b).
      hang.settle();
      await until('a campaigns again', () => traceA.filter((e) => e.type === 'queued').length > 1);
      assert.equal(a.isLeader, false);
    } finally {
      hang.settle();
      await Promise.all([a.stop(), b.stop()]);
      await Promise.all([c1?.close(), c2?.close()]);
    }
  });

  test(`${kind}: a leader that calls progress() keeps leading past several deadlines`, async () => {
    const c1 = await connect({ endpoints: cluster.endpoints });
    let beats = 0;
    let term: { signal: AbortSignal; token: bigint } | undefined;
    const errors: unknown[] = [];
    let starts = 0;
    const a = new LeaderElector(c1, {
      name: 'stuck/healthy',
      identity: 'a',
      ttlSeconds,
      progressDeadlineMs,
      onError: (e) => errors.push(e),
      onStartedLeading: async ({ signal, token, progress }) => {
        starts++;
        term = { signal, token };
        while (!signal.aborted) {
          await sleep(beatIntervalMs);
          progress();
          beats++;
        }
      },
    });
    try {
      a.start();
      await until('beats over several deadlines', () => beats >= beatsSpanningDeadlines);
      assert.equal(term?.signal.aborted, false, String(term?.signal.reason));
      assert.equal(a.isLeader, true);
      assert.equal(starts, 1);
      assert.deepEqual(errors, []);
    } finally {
      await a.stop();
      await c1.close();
    }
  });

  test(`${kind}: Lock.run: a stuck holder's lease runs out; the next waiter locks`, async () => {
    const name = 'stuck/lock';
    const [c1, c2] = await Promise.all([1, 2].map(() => connect({ endpoints: cluster.endpoints })));
    const s1 = await c1!.session({ ttlSeconds });
    const s2 = await c2!.session({ ttlSeconds });
    const hang = never();
    const trace: RecipeTraceEvent[] = [];
    let held: { signal: AbortSignal; token: bigint; key: string } | undefined;
    let settled = false;
    const run = new Lock(c1!, s1, name, { trace: (e) => trace.push(e) })
      .run(
        async ({ signal, token, grant }) => {
          held = { signal, token, key: grant.key };
          await hang.promise;
        },
        { progressDeadlineMs },
      )
      .finally(() => (settled = true));
    try {
      await until('held', () => held !== undefined);
      const next = new Lock(c2!, s2, name).acquire({ timeoutMs: takeoverBoundMs });
      await until('stuck', () => held?.signal.aborted === true, takeoverBoundMs);
      assert.ok(isStuck(held?.signal.reason), `reason ${String(held?.signal.reason)}`);
      assert.equal(s1.abandoned, true);
      await keyGone(held?.key ?? '');
      const g2 = await next;
      assert.ok(g2.token > (held?.token ?? 0n), `${g2.token} > ${held?.token}`);
      assert.equal(settled, false, 'run() waits for the stuck critical section');
      assert.equal(trace.filter((e) => e.type === 'released').length, 0, 'no release while stuck');
      await g2.release();
    } finally {
      hang.settle();
      await run.catch(() => undefined);
      await Promise.all([s1.close().catch(() => {}), s2.close().catch(() => {})]);
      await Promise.all([c1?.close(), c2?.close()]);
    }
  });

  test(`${kind}: Lock.run: a holder that calls progress() keeps the lock`, async () => {
    const c1 = await connect({ endpoints: cluster.endpoints });
    const s1 = await c1.session({ ttlSeconds });
    try {
      const out = await new Lock(c1, s1, 'stuck/lock-healthy').run(
        async ({ signal, progress, grant }) => {
          for (let beats = 0; beats < beatsSpanningDeadlines; beats++) {
            await sleep(beatIntervalMs);
            progress();
          }
          return { aborted: signal.aborted, valid: grant.valid(), renewing: !s1.abandoned };
        },
        { progressDeadlineMs },
      );
      assert.deepEqual(out, { aborted: false, valid: true, renewing: true });
    } finally {
      await s1.close().catch(() => {});
      await c1.close();
    }
  });
}
