// The conformance suite of the coordination recipes (Lock, Election, LeaderElector), run against
// a 3-member tenure cluster and a 3-member etcd 3.4 cluster (recipes-etcd.test.ts,
// recipes-tenure.test.ts). Every process started here (cluster members, etcdctl, child holders
// and electors) is stopped by PID in a finally. No assertion is about speed: latencies are
// measured and printed as diagnostics; time bounds only bound hangs.
import { LineChild } from '../support/line-child.js';
import { until as eventually } from '../support/poll.js';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import {
  Election,
  LeaderElector,
  Lock,
  RecipeError,
  SessionExpiredError,
  connect,
  type CallOptions,
  type Client,
  type LeaderInfo,
  type LockGrant,
  type RecipeTraceEvent,
  type Session,
  type SessionTransport,
} from '../../src/client/index.js';
import {
  EtcdctlProcess,
  startCluster,
  type BackendKind,
  type Cluster,
} from '../cluster/cluster.js';

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

type Line = Record<string, unknown>;

/** A compiled test script run with node; JSON stdout lines; stopped by PID. */
export class NodeChild {
  readonly #child: LineChild;

  constructor(script: string, args: readonly string[]) {
    const path = fileURLToPath(new URL(script, import.meta.url));
    this.#child = new LineChild(process.execPath, [path, ...args]);
  }

  get lines(): Line[] {
    return this.#child.records<Line>();
  }

  get pid(): number {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#child.running;
  }

  waitFor(type: string, timeoutMs = 20_000): Promise<Line> {
    return this.#child.waitFor(
      `"${type}" line`,
      () => this.lines.find((x) => x.type === type),
      timeoutMs,
    );
  }

  /** Wait for the child to exit by itself; fail (it is then stopped by the caller) if it does not. */
  async waitExit(timeoutMs: number): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>(
      (r) => (timer = setTimeout(() => r('timeout'), timeoutMs)),
    );
    const how = await Promise.race([this.#child.exited().then(() => 'exited' as const), bound]);
    clearTimeout(timer);
    if (how === 'timeout') assert.fail(this.#child.describe(`still running ${timeoutMs} ms on`));
    return this.#child.exitCode;
  }

  /** Write one line to the child's stdin. */
  send(line: string): void {
    this.#child.write(line);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) process.kill(this.pid, signal);
  }

  /** SIGKILL by PID (it ends a stopped process too) and wait for the exit. */
  async stop(): Promise<void> {
    await this.#child.stop('SIGKILL');
  }
}

/** A lease transport whose renewals can be held back (a partition of this client alone). */
class BlockableTransport implements SessionTransport {
  blocked = false;
  constructor(private readonly client: Client) {}
  grant(ttl: number, o: CallOptions) {
    return this.client.lease.grant(ttl, o);
  }
  revoke(id: bigint, o: CallOptions) {
    return this.client.lease.revoke(id, o);
  }
  async keepAliveOnce(id: bigint, o: CallOptions) {
    if (this.blocked) {
      await new Promise((_r, reject) =>
        o.signal?.addEventListener('abort', () => reject(o.signal?.reason as Error)),
      );
    }
    return this.client.lease.keepAliveOnce(id, o);
  }
}

export function recipesContract(kind: BackendKind): void {
  let cluster: Cluster;
  let client: Client;
  const endpoints = (): string => cluster.endpoints.join(',');

  before(async () => {
    cluster = await startCluster({ kind, size: 3 });
    client = await connect({ endpoints: cluster.endpoints });
  });

  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  test(`${kind}: mutual exclusion with 8 contending clients; tokens strictly increase`, async (t) => {
    const name = 'me/lock';
    const rounds = 3;
    const sections: Array<{ enter: number; exit: number; token: bigint; who: number }> = [];
    const handOffs: number[] = [];
    let lastExit: number | undefined;
    const clients = await Promise.all(
      Array.from({ length: 8 }, () => connect({ endpoints: cluster.endpoints })),
    );
    try {
      await Promise.all(
        clients.map(async (c, who) => {
          const session = await c.session({ ttlSeconds: 10 });
          const lock = new Lock(c, session, name);
          for (let r = 0; r < rounds; r++) {
            await lock.run(async ({ signal, token }) => {
              const enter = performance.now();
              if (lastExit !== undefined) handOffs.push(enter - lastExit);
              assert.equal(signal.aborted, false);
              await new Promise((res) => setTimeout(res, 2 + ((who * 7 + r) % 10)));
              const exit = performance.now();
              sections.push({ enter, exit, token, who });
              lastExit = exit;
            });
          }
          await session.close();
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
    assert.equal(sections.length, 8 * rounds);
    sections.sort((a, b) => a.enter - b.enter);
    for (let i = 1; i < sections.length; i++) {
      const prev = sections[i - 1] as (typeof sections)[number];
      const cur = sections[i] as (typeof sections)[number];
      assert.ok(prev.exit <= cur.enter, `critical sections ${i - 1} and ${i} overlap`);
      assert.ok(prev.token < cur.token, `token ${cur.token} not above ${prev.token}`);
    }
    t.diagnostic(
      `${kind}: lock hand-off (release → next holder's grant, contended) median ` +
        `${median(handOffs).toFixed(1)} ms over ${handOffs.length}`,
    );
  });

  test(`${kind}: interoperates with etcdctl lock on the same name, both ways`, async () => {
    const name = 'interop/lock';
    const session = await client.session({ ttlSeconds: 10 });
    const events: RecipeTraceEvent[] = [];
    const lock = new Lock(client, session, name, { trace: (e) => events.push(e) });
    // 1. etcdctl holds; we queue behind it; etcdctl is stopped by PID; we get the lock.
    const ctl = new EtcdctlProcess(cluster.endpoints, ['lock', name, '--ttl=5']);
    let grant: LockGrant | undefined;
    try {
      const [ctlKey] = await ctl.waitForLines(1, 15_000);
      assert.match(ctlKey ?? '', /^interop\/lock\/[0-9a-f]+$/);
      const ctlRev = (await client.kv.get(ctlKey ?? ''))?.createRevision ?? 0n;
      let granted = false;
      const pending = lock.acquire().then((g) => {
        granted = true;
        return g;
      });
      await eventually('queued behind etcdctl', () =>
        events.some((e) => e.type === 'watch-predecessor' && e.predecessor === ctlKey),
      );
      assert.equal(granted, false, 'etcdctl holds the lock');
      await ctl.stop('SIGTERM');
      grant = await pending;
      assert.ok(grant.token > ctlRev);
    } finally {
      await ctl.stop('SIGKILL');
    }
    // 2. We hold; etcdctl queues behind us and gets the lock only after our release.
    const ctl2 = new EtcdctlProcess(cluster.endpoints, ['lock', name, '--ttl=5']);
    try {
      for (;;) {
        const r = await client.kv.range(`${name}/`, { prefix: true });
        if (r.kvs.length === 2) break;
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(ctl2.lines.length, 0, 'etcdctl waits behind us');
      assert.equal(await grant.release(), true);
      const [key2] = await ctl2.waitForLines(1, 15_000);
      assert.match(key2 ?? '', /^interop\/lock\/[0-9a-f]+$/);
      assert.notEqual(key2, grant.key);
    } finally {
      await ctl2.stop('SIGKILL');
      await session.close();
    }
  });

  test(`${kind}: closing the client ends grants, electors, observers, keepalives and watches`, async () => {
    // The child holds all of them when it closes its client, and stops none: the process must then
    // exit by itself. The bound only stops a hang; it is not a duration asserted.
    const child = new NodeChild('./closed-client-child.js', [endpoints(), 'closed-client']);
    try {
      const code = await child.waitExit(60_000);
      const by = (type: string): Line | undefined => child.lines.find((l) => l.type === type);
      assert.equal(code, 0, `exit code; lines ${JSON.stringify(child.lines)}`);
      assert.ok(by('open') !== undefined, 'everything was open before the close');
      assert.deepEqual(by('grant'), { type: 'grant', aborted: true, reason: 'ClientClosedError' });
      assert.equal(by('elector')?.ended, true);
      assert.equal(by('observer')?.ended, true);
      assert.deepEqual(by('keepalive'), { type: 'keepalive', error: 'ClientClosedError' });
      assert.deepEqual(by('watcher'), { type: 'watcher', error: null });
      assert.deepEqual(by('late-watch'), {
        type: 'late-watch',
        error: 'ClientClosedError',
        typed: true,
      });
      assert.ok(by('done') !== undefined);
    } finally {
      await child.stop();
    }
  });

  test(`${kind}: 20 waiters; each release wakes exactly one (no herd)`, async (t) => {
    const name = 'herd/lock';
    const n = 20;
    const holderSession = await client.session({ ttlSeconds: 10 });
    const sessions: Session[] = [];
    const perWaiter: RecipeTraceEvent[][] = Array.from({ length: n }, () => []);
    const grantedAt: number[] = [];
    const releasedAt: number[] = [];
    let activeAtFirstGrant: number | undefined;
    let before: number[] = [];
    try {
      const holder = await new Lock(client, holderSession, name).acquire();
      const waiters: Array<Promise<void>> = [];
      for (let i = 0; i < n; i++) {
        const s = await client.session({ ttlSeconds: 10 });
        sessions.push(s);
        const lock = new Lock(client, s, name, { trace: (e) => perWaiter[i]?.push(e) });
        waiters.push(
          lock.acquire().then(async (g) => {
            grantedAt.push(performance.now());
            // At the first grant, before it releases: who has done anything since the release?
            activeAtFirstGrant ??= perWaiter.filter(
              (evs, j) => evs.length > (before[j] ?? 0),
            ).length;
            releasedAt.push(performance.now());
            await g.release();
          }),
        );
        await eventually(`waiter ${i} queued`, () =>
          (perWaiter[i] ?? []).some((e) => e.type === 'watch-predecessor'),
        );
      }
      before = perWaiter.map((evs) => evs.length);
      releasedAt.push(performance.now());
      await holder.release();
      await Promise.all(waiters);
      assert.equal(activeAtFirstGrant, 1, 'the release woke exactly one waiter');
      // Deterministic over the whole chain: every waiter read the queue once, when it queued
      // (after a wake-up the head check decides), and woke exactly once (its own predecessor's
      // release). A herd (every waiter watching the prefix) would make these counts grow with n².
      const wakes = perWaiter.map((evs) => evs.filter((e) => e.type === 'wake').length);
      const reads = perWaiter.map((evs) => evs.filter((e) => e.type === 'read').length);
      assert.deepEqual(wakes, Array<number>(n).fill(1));
      assert.deepEqual(reads, Array<number>(n).fill(1));
      const lat = grantedAt.map((g, i) => g - (releasedAt[i] ?? g));
      t.diagnostic(
        `${kind}: lock hand-off over a 20-waiter queue median ${median(lat).toFixed(1)} ms`,
      );
    } finally {
      await Promise.all([holderSession, ...sessions].map((s) => s.close().catch(() => {})));
    }
  });

  test(`${kind}: queued acquire aborts when its session dies; no phantom grant`, async () => {
    const name = 'phantom/lock';
    const holder = await client.session({ ttlSeconds: 10 });
    const waiter = await client.session({ ttlSeconds: 10 });
    try {
      const g = await new Lock(client, holder, name).acquire();
      const events: RecipeTraceEvent[] = [];
      const pending = new Lock(client, waiter, name, { trace: (e) => events.push(e) }).acquire();
      await eventually('queued', () => events.some((e) => e.type === 'watch-predecessor'));
      await client.lease.revoke(waiter.leaseId);
      await assert.rejects(
        pending,
        (e) => e instanceof RecipeError || e instanceof SessionExpiredError,
      );
      assert.equal(g.valid(), true, 'the holder still holds');
      await g.release();
    } finally {
      await holder.close();
      await waiter.close().catch(() => {});
    }
  });

  test(`${kind}: two sessions on one lease cannot both hold; aborted acquires leave no key`, async () => {
    const name = 'shared-lease/lock';
    const s1 = await client.session({ ttlSeconds: 10 });
    const s2 = await client.session({ ttlSeconds: 10, leaseId: s1.leaseId });
    try {
      const g = await new Lock(client, s1, name).acquire();
      // One key per (lease, name) in etcd's layout: the second session must not adopt it.
      await assert.rejects(new Lock(client, s2, name).acquire(), {
        name: 'RecipeError',
        code: 'ALREADY_QUEUED',
      });
      await g.release();
      // Abort acquires at once and after a few milliseconds, while the enqueue Txn may be in
      // flight: no key of ours may stay queued.
      for (let i = 0; i < 20; i++) {
        const ac = new AbortController();
        const p = new Lock(client, s1, `${name}/abort`).acquire({ signal: ac.signal });
        setTimeout(() => ac.abort(new Error('test abort')), i % 5);
        await p.then((grant) => grant.release()).catch(() => undefined);
      }
      const left = await client.kv.range(`${name}/abort/`, { prefix: true });
      assert.equal(left.kvs.length, 0, 'no queue key left behind');
    } finally {
      await s1.close();
      await s2.close().catch(() => {});
    }
  });

  test(`${kind}: lock-delay after an unclean loss, none after a clean release`, async () => {
    const name = 'delay/lock';
    const delayMs = 300;
    for (const clean of [true, false]) {
      const a = await client.session({ ttlSeconds: 10 });
      const b = await client.session({ ttlSeconds: 10 });
      try {
        const g = await new Lock(client, a, name).acquire();
        const events: RecipeTraceEvent[] = [];
        const lock = new Lock(client, b, name, {
          lockDelayMs: delayMs,
          trace: (e) => events.push(e),
        });
        const pending = lock.acquire();
        await eventually('queued', () => events.some((e) => e.type === 'watch-predecessor'));
        if (clean) await g.release();
        else await client.lease.revoke(a.leaseId); // the holder "dies": its key goes, no marker
        const g2 = await pending;
        const delayed = events.filter((e) => e.type === 'lock-delay');
        assert.equal(delayed.length, clean ? 0 : 1, clean ? 'clean release' : 'unclean loss');
        await g2.release();
      } finally {
        await a.close().catch(() => {});
        await b.close();
      }
    }
  });

  test(`${kind}: lock-delay counts from the holder's end, not from a waiter that left`, async () => {
    const name = 'delay2/lock';
    const delayMs = 300;
    for (const holderClean of [true, false]) {
      const h = await client.session({ ttlSeconds: 10 });
      const m = await client.session({ ttlSeconds: 10 });
      const b = await client.session({ ttlSeconds: 10 });
      try {
        const g = await new Lock(client, h, name).acquire();
        const mEvents: RecipeTraceEvent[] = [];
        const mPending = new Lock(client, m, name, { trace: (e) => mEvents.push(e) })
          .acquire()
          .catch(() => undefined);
        await eventually('m queued', () => mEvents.some((e) => e.type === 'watch-predecessor'));
        const events: RecipeTraceEvent[] = [];
        const pending = new Lock(client, b, name, {
          lockDelayMs: delayMs,
          trace: (e) => events.push(e),
        }).acquire();
        await eventually('b queued', () => events.some((e) => e.type === 'watch-predecessor'));
        await client.lease.revoke(m.leaseId); // a waiter dies: its key goes, no marker
        await mPending;
        // b woke for m's deletion, found the holder still there and now watches it.
        await eventually(
          'b watches the holder',
          () => events.filter((e) => e.type === 'watch-predecessor').length === 2,
        );
        if (holderClean) await g.release();
        else await client.lease.revoke(h.leaseId);
        const g2 = await pending;
        const delayed = events.filter((e) => e.type === 'lock-delay');
        assert.equal(
          delayed.length,
          holderClean ? 0 : 1,
          holderClean ? 'the holder released cleanly' : 'the holder died',
        );
        await g2.release();
      } finally {
        await Promise.all([h, m].map((s) => s.close().catch(() => {})));
        await b.close();
      }
    }
  });

  test(`${kind}: election: campaign, proclaim, resign, observe (null, same-value new term)`, async () => {
    const name = 'el/basic';
    const election = new Election(client, name);
    const seen: Array<LeaderInfo | null> = [];
    const observer = election.observe();
    const consumer = (async () => {
      for await (const s of observer) seen.push(s);
    })();
    const sa = await client.session({ ttlSeconds: 10 });
    const sb = await client.session({ ttlSeconds: 10 });
    try {
      await eventually('no leader reported', () => seen.length === 1);
      assert.equal(seen[0], null);
      assert.equal(await election.leader(), null);
      const a = await election.campaign(sa, 'same');
      await eventually('leader a', () => seen.length === 2);
      assert.equal(seen[1]?.token, a.token);
      const bPending = election.campaign(sb, 'same');
      await a.proclaim('other');
      await eventually('proclaim seen', () => seen.length === 3);
      assert.equal(seen[2]?.value.toString(), 'other');
      assert.equal(seen[2]?.token, a.token);
      await a.proclaim('same');
      await eventually('proclaim back seen', () => seen.length === 4);
      assert.equal(await a.resign(), true);
      assert.equal(await a.resign(), true, 'idempotent (same call)');
      await assert.rejects(a.proclaim('x'), RecipeError);
      const b = await bPending;
      assert.ok(b.token > a.token);
      await eventually('new term with the same value', () =>
        seen.some((s) => s !== null && s.token === b.token),
      );
      assert.equal(seen.find((s) => s?.token === b.token)?.value.toString(), 'same');
      assert.equal((await election.leader())?.token, b.token);
      await b.resign();
      await eventually('no leader again', () => seen[seen.length - 1] === null);
    } finally {
      await observer.close();
      await consumer;
      await sa.close();
      await sb.close();
    }
  });

  test(`${kind}: a campaign whose session expires while queued never returns success`, async () => {
    const name = 'el/phantom';
    const election = new Election(client, name);
    const sa = await client.session({ ttlSeconds: 10 });
    const sb = await client.session({ ttlSeconds: 10 });
    try {
      const a = await election.campaign(sa, 'a');
      const events: RecipeTraceEvent[] = [];
      const e2 = new Election(client, name, { trace: (e) => events.push(e) });
      const pending = e2.campaign(sb, 'b');
      await eventually('queued', () => events.some((e) => e.type === 'watch-predecessor'));
      await client.lease.revoke(sb.leaseId);
      await assert.rejects(
        pending,
        (e) => e instanceof RecipeError || e instanceof SessionExpiredError,
      );
      await a.resign();
      assert.equal(await election.leader(), null, 'no phantom leader key');
    } finally {
      await sa.close();
      await sb.close().catch(() => {});
    }
  });

  test(`${kind}: elector hand-off to a chosen successor; jeopardy drops leadership`, async () => {
    const name = 'el/handoff';
    const log: string[] = [];
    const events: Record<string, RecipeTraceEvent[]> = { a: [], b: [], c: [] };
    const transport = new BlockableTransport(client);
    const make = (id: string): LeaderElector =>
      new LeaderElector(client, {
        name,
        identity: id,
        ttlSeconds: 3,
        retryIntervalMs: 100,
        ...(id === 'a' ? { session: { transport } } : {}),
        trace: (e) => events[id]?.push(e),
        onStartedLeading: ({ token }) => void log.push(`${id}:start:${token}`),
        onStoppedLeading: () => void log.push(`${id}:stop`),
      });
    const a = make('a').start();
    const b = make('b');
    const c = make('c');
    try {
      await eventually('a leads', () => a.isLeader);
      b.start();
      await eventually('b queued', () =>
        (events.b ?? []).some((e) => e.type === 'watch-predecessor'),
      );
      c.start();
      await eventually('c queued', () =>
        (events.c ?? []).some((e) => e.type === 'watch-predecessor'),
      );
      await a.handOff('c');
      await eventually('c leads', () => c.isLeader);
      assert.equal(b.isLeader, false, 'b stepped back although it was ahead of c');
      assert.ok((events.b ?? []).some((e) => e.type === 'yield'));
      assert.deepEqual(
        log.filter((l) => l.startsWith('a:')).map((l) => l.split(':')[1]),
        ['start', 'stop'],
      );
      // Jeopardy: c hands back to a; then a's renewals are held back.
      await c.handOff('a');
      await eventually('a leads again', () => a.isLeader);
      const stopsBefore = log.filter((l) => l === 'a:stop').length;
      transport.blocked = true;
      await eventually(
        'a dropped leadership at jeopardy',
        () => log.filter((l) => l === 'a:stop').length > stopsBefore,
      );
      transport.blocked = false;
      await eventually('someone leads again', () => a.isLeader || b.isLeader || c.isLeader);
    } finally {
      transport.blocked = false;
      await Promise.all([a.stop(), b.stop(), c.stop()]);
    }
  });

  test(`${kind}: kill -9 of the leading elector's process; another leads after its TTL`, async (t) => {
    const name = 'el/kill9';
    const ttlSeconds = 2;
    const child = new NodeChild('../../src/bench/elector-child.js', [
      endpoints(),
      name,
      'child',
      `${ttlSeconds}`,
    ]);
    const events: RecipeTraceEvent[] = [];
    let ledAt: number | undefined;
    let token: bigint | undefined;
    const local = new LeaderElector(client, {
      name,
      identity: 'local',
      ttlSeconds,
      trace: (e) => events.push(e),
      onStartedLeading: (ctx) => {
        ledAt = performance.now();
        token = ctx.token;
      },
    });
    try {
      const leading = await child.waitFor('leading');
      local.start();
      await eventually('local queued', () => events.some((e) => e.type === 'watch-predecessor'));
      const killedAt = performance.now();
      child.signal('SIGKILL');
      await eventually('local leads', () => ledAt !== undefined, 30_000);
      const failoverMs = (ledAt ?? 0) - killedAt;
      t.diagnostic(
        `${kind}: elector failover after kill -9: ${failoverMs.toFixed(0)} ms (TTL ${ttlSeconds} s)`,
      );
      // The time is reported, not asserted (tests never assert speed); `eventually` bounds a hang.
      assert.ok((token ?? 0n) > BigInt(leading.token as string));
    } finally {
      await child.stop();
      await local.stop();
    }
  });

  test(`${kind}: killing the member the client uses does not lose the session or the lock`, async (t) => {
    const c = await connect({ endpoints: cluster.endpoints });
    const session = await c.session({ ttlSeconds: 10 });
    const transitions: string[] = [];
    session.on('change', (tr) => transitions.push(`${tr.to}:${tr.reason}`));
    try {
      const grant = await new Lock(c, session, 'failover/lock').acquire();
      const preferred = c.preferredEndpoint;
      const i = cluster.endpoints.findIndex((e) => e.endsWith(preferred));
      assert.ok(i >= 0, `preferred endpoint ${preferred} is a member`);
      let invalidSamples = 0;
      const sampler = setInterval(() => {
        if (!session.valid()) invalidSamples++;
      }, 50);
      try {
        await cluster.kill(i, 'SIGKILL');
        // Several renewal rounds (TTL/3 each) through the remaining members.
        const until = Date.now() + 8_000;
        while (Date.now() < until) {
          await c.kv.get('failover/probe').catch(() => undefined);
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        clearInterval(sampler);
      }
      t.diagnostic(`${kind}: session transitions during failover: ${JSON.stringify(transitions)}`);
      assert.equal(invalidSamples, 0, 'valid() never false during the failover');
      assert.deepEqual(transitions, []);
      assert.equal(grant.valid(), true);
      assert.equal((await c.kv.get(grant.key))?.createRevision, grant.token);
      assert.equal(await grant.release(), true);
    } finally {
      await session.close().catch(() => {});
      await c.close();
    }
  });
}
