// The registry's conformance suite, run against a 3-member tenure cluster and a 3-member etcd 3.4
// cluster (registry-tenure.test.ts, registry-etcd.test.ts). Every view a watcher yields is checked
// against the one before it (the Follower below): revisions increase, and the previous set with
// the view's changes applied is exactly the view's set; the final set is compared with list().
// Go's side is the golden fixtures of testdata/naming, put with etcdctl the way a Go service's
// Manager would. Every process started here is stopped by PID in a finally; time bounds only
// bound hangs.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import {
  RecipeError,
  Registry,
  SessionExpiredError,
  connect,
  encodeEndpoint,
  type Client,
  type InstanceSet,
  type RegistryView,
  type RegistryWatcher,
} from '../../src/client/index.js';
import { etcdctl, startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import { LineChild } from '../support/line-child.js';
import { TcpRelay } from '../../src/launcher/tcp-relay.js';
import { fixture, goDecodable, goEndpoints } from './registry-fixtures.js';

/** Bound on waiting for a view that must come (a hang, not a speed verdict). */
const viewTimeoutMs = 30_000;

/** The keys and mod revisions of a set, comparable with deepEqual. */
const shape = (s: InstanceSet): Array<[string, bigint]> =>
  [...s.values()].map((i): [string, bigint] => [i.key, i.modRevision]).sort();

/** Reads a watcher's views, checking each against the one before it. */
class Follower {
  readonly views: RegistryView[] = [];
  readonly #it: AsyncIterator<RegistryView>;

  constructor(readonly watcher: RegistryWatcher) {
    this.#it = watcher[Symbol.asyncIterator]();
  }

  get last(): RegistryView | undefined {
    return this.views[this.views.length - 1];
  }

  /** Read views until `done` holds for one; fails on a broken chain or after the bound. */
  async until(what: string, done: (v: RegistryView) => boolean): Promise<RegistryView> {
    const last = this.last;
    if (last !== undefined && done(last)) return last;
    const deadline = performance.now() + viewTimeoutMs;
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), Math.max(0, deadline - performance.now()));
      });
      const r = await Promise.race([this.#it.next(), bound]);
      clearTimeout(timer);
      if (r === 'timeout') {
        assert.fail(`no view with ${what} in ${viewTimeoutMs} ms; last ${describe(this.last)}`);
      }
      if (r.done === true) assert.fail(`watcher ended waiting for ${what}`);
      this.#check(r.value);
      if (done(r.value)) return r.value;
    }
  }

  #check(v: RegistryView): void {
    const prev = this.last;
    this.views.push(v);
    if (prev === undefined) {
      assert.equal(v.source, 'snapshot');
      assert.ok(v.changes.every((c) => c.type === 'added'));
    } else {
      assert.ok(v.revision > prev.revision, `revision ${v.revision} after ${prev.revision}`);
    }
    const m = new Map(prev?.instances ?? []);
    for (const c of v.changes) {
      if (c.type === 'removed') {
        assert.ok(m.delete(c.instance.key), `removed ${c.instance.key}, not in the set`);
      } else {
        assert.equal(m.has(c.instance.key), c.type === 'updated', `${c.type} ${c.instance.key}`);
        m.set(c.instance.key, c.instance);
        if (v.source === 'watch') assert.equal(c.instance.modRevision, v.revision);
      }
    }
    assert.deepEqual(shape(m), shape(v.instances), 'previous set + changes = this set');
  }
}

/** `p`, or a failure naming `what` after `ms` (a hang, not a speed verdict). */
async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(v: RegistryView | undefined): string {
  if (v === undefined) return 'none';
  return `${v.source}@${v.revision} [${[...v.instances.keys()].join(', ')}]`;
}

export function registryContract(kind: BackendKind): void {
  let cluster: Cluster;
  let client: Client;
  let registry: Registry;

  before(async () => {
    cluster = await startCluster({ kind, size: 3 });
    client = await connect({ endpoints: cluster.endpoints });
    registry = new Registry(client);
  });

  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  test(`${kind}: a snapshot, then every change: 24 concurrent registrations while watching`, async () => {
    const service = 'race/svc';
    const n = 24;
    const sessions = await Promise.all([0, 1, 2].map(() => client.session({ ttlSeconds: 30 })));
    const watcher = registry.watch(service);
    const f = new Follower(watcher);
    try {
      const regs = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          registry.register(service, `10.1.0.${i}:7000`, {
            session: sessions[i % 3] ?? assert.fail(),
          }),
        ),
      );
      const full = await f.until(`${n} instances`, (v) => v.instances.size === n);
      assert.deepEqual(shape(full.instances), shape((await registry.list(service)).instances));
      // And the other way: half of them leave concurrently.
      await Promise.all(regs.filter((_, i) => i % 2 === 0).map((r) => r.unregister()));
      const half = await f.until(`${n / 2} instances`, (v) => v.instances.size === n / 2);
      const listed = await registry.list(service);
      assert.deepEqual(shape(half.instances), shape(listed.instances));
      assert.ok(half.revision <= listed.revision);
      const added = f.views.flatMap((v) => v.changes).filter((c) => c.type === 'added').length;
      assert.equal(added, n, 'each registration reported once');
    } finally {
      await watcher.close();
      await Promise.all(sessions.map((s) => s.close()));
    }
  });

  test(`${kind}: kill -9 of a registered process: it leaves the set after its TTL`, async (t) => {
    const service = 'kill9/svc';
    const ttlSeconds = 2;
    const watcher = registry.watch(service);
    const f = new Follower(watcher);
    const path = fileURLToPath(new URL('./registry-child.js', import.meta.url));
    const child = new LineChild(process.execPath, [
      path,
      cluster.endpoints.join(','),
      service,
      '10.2.0.1:7000',
      String(ttlSeconds),
    ]);
    try {
      const line = await child.waitFor(
        '"registered" line',
        () => child.records<{ type: string; key: string }>().find((l) => l.type === 'registered'),
        20_000,
      );
      const seen = await f.until('the child', (v) => v.instances.has(line.key));
      const inst = seen.instances.get(line.key);
      assert.deepEqual(inst?.metadata, { pid: child.pid });
      const killedAt = performance.now();
      process.kill(child.pid, 'SIGKILL');
      await child.exited();
      const gone = await f.until('the child gone', (v) => !v.instances.has(line.key));
      const goneMs = performance.now() - killedAt;
      assert.ok(gone.changes.some((c) => c.type === 'removed' && c.instance.key === line.key));
      assert.equal((await registry.list(service)).instances.has(line.key), false);
      t.diagnostic(
        `${kind}: instance gone ${goneMs.toFixed(0)} ms after kill -9 (TTL ${ttlSeconds} s)`,
      );
    } finally {
      await child.stop('SIGKILL');
      await watcher.close();
    }
  });

  test(`${kind}: unregister removes at once; a closed session reports the loss`, async () => {
    const service = 'unreg/svc';
    const session = await client.session({ ttlSeconds: 30 });
    try {
      const a = await registry.register(service, '10.3.0.1:1', { session });
      const b = await registry.register(service, '10.3.0.2:1', { session });
      assert.equal((await registry.list(service)).instances.size, 2);
      assert.equal(await a.unregister(), true);
      // The very next read no longer lists it: no TTL to wait for.
      assert.deepEqual([...(await registry.list(service)).instances.keys()], [b.key]);
      assert.ok(a.signal.aborted);
      assert.ok(a.signal.reason instanceof RecipeError && a.signal.reason.code === 'UNREGISTERED');
      assert.equal(await a.unregister(), true, 'idempotent: the same answer');
      assert.equal(b.signal.aborted, false);
      await session.close();
      const why = await b.lost();
      assert.ok(why instanceof SessionExpiredError, String(why));
      assert.equal((await registry.list(service)).instances.size, 0, 'gone with the lease');
      await assert.rejects(
        registry.register(service, '10.3.0.3:1', { session }),
        SessionExpiredError,
      );
    } finally {
      await session.close();
    }
  });

  test(`${kind}: same id, two leases: later put wins, earlier unregister is a no-op`, async () => {
    const service = 'same-id/svc';
    const s1 = await client.session({ ttlSeconds: 30 });
    const s2 = await client.session({ ttlSeconds: 30 });
    const owner = async (key: string): Promise<bigint | undefined> =>
      (await registry.list(service)).instances.get(key)?.leaseId;
    try {
      // Unregistering at once, before any watch event could have reached the earlier one.
      const a = await registry.register(service, '10.3.1.1:1', { session: s1, id: 'x' });
      const b = await registry.register(service, '10.3.1.2:1', { session: s2, id: 'x' });
      assert.equal(b.key, a.key);
      assert.equal(await a.unregister(), false, 'deleted nothing');
      assert.equal(await owner(b.key), s2.leaseId, "the later registration's key is intact");
      assert.equal(b.signal.aborted, false);
      // Told: the earlier registration's signal aborts once its key carries another lease.
      const c = await registry.register(service, '10.3.1.3:1', { session: s1, id: 'x' });
      assert.equal(await owner(c.key), s1.leaseId);
      const why = await within(viewTimeoutMs, b.lost(), 'the earlier registration is told');
      assert.ok(why instanceof RecipeError, String(why));
      assert.equal(why.code, 'KEY_REPLACED', why.message);
      assert.equal(await b.unregister(), false);
      assert.equal(await owner(c.key), s1.leaseId, 'still the later one');
      assert.equal(c.signal.aborted, false);
      assert.equal(await c.unregister(), true);
      assert.equal(await owner(c.key), undefined);
    } finally {
      await s1.close();
      await s2.close();
    }
  });

  test(`${kind}: register() writes Go's exact bytes; metadata round-trips`, async () => {
    const session = await client.session({ ttlSeconds: 30 });
    try {
      for (const line of fixture('go-endpoints.txt')) {
        const e = goEndpoints.get(line.key) ?? assert.fail(line.key);
        const reg = await registry.register('svc', e.addr, {
          session,
          id: e.id,
          metadata: e.metadata,
        });
        assert.equal(reg.key, line.key);
        const kv = await client.kv.get(line.key);
        assert.ok(kv?.value.equals(line.value), `${line.key}: ${kv?.value.toString()}`);
        assert.equal(kv?.lease, session.leaseId);
        // etcdctl (a foreign client) reads the same bytes.
        const got = await etcdctl(cluster.endpoints, ['get', '--print-value-only', line.key]);
        assert.equal(got.stdout, `${line.value.toString()}\n`);
      }
      const listed = (await registry.list('svc')).instances;
      for (const [key, e] of goEndpoints) {
        assert.deepEqual(listed.get(key)?.metadata, e.metadata, key);
        assert.equal(listed.get(key)?.addr, e.addr);
      }
      const meta = { region: 'eu', weights: [1, 2.5], tls: { on: true, sni: '<x>&y' } };
      const r = await registry.register('meta/svc', '10.4.0.1:1', { session, metadata: meta });
      assert.deepEqual((await registry.list('meta/svc')).instances.get(r.key)?.metadata, meta);
      const kv = await client.kv.get(r.key);
      assert.ok(kv?.value.equals(encodeEndpoint({ addr: '10.4.0.1:1', metadata: meta })));
    } finally {
      await session.close();
    }
  });

  test(`${kind}: values put by etcdctl in Go's format are seen by watch() and list()`, async () => {
    const service = 'gosvc';
    const watcher = registry.watch(service);
    const f = new Follower(watcher);
    try {
      await f.until('the snapshot', () => true);
      const grant = await etcdctl(cluster.endpoints, ['lease', 'grant', '30']);
      const leaseHex =
        /lease ([0-9a-f]+) granted/.exec(grant.stdout)?.[1] ?? assert.fail(grant.stdout);
      const lines = [...fixture('go-endpoints.txt'), ...fixture('go-decodable.txt')];
      const expected = new Map<string, { addr: string; metadata: unknown }>();
      for (const line of lines) {
        const key = line.key.replace(/^svc\//, `${service}/`);
        const r = await etcdctl(cluster.endpoints, [
          'put',
          `--lease=${leaseHex}`,
          '--',
          key,
          line.value.toString(),
        ]);
        assert.equal(r.code, 0, r.stderr);
        const e = goEndpoints.get(line.key) ?? goDecodable.get(line.key) ?? assert.fail(line.key);
        expected.set(key, { addr: e.addr, metadata: e.metadata });
      }
      const v = await f.until('every Go value', (x) => x.instances.size === expected.size);
      const listed = await registry.list(service);
      assert.equal(listed.skipped.length, 0);
      for (const set of [v.instances, listed.instances]) {
        for (const [key, e] of expected) {
          const inst = set.get(key);
          assert.deepEqual({ addr: inst?.addr, metadata: inst?.metadata }, e, key);
          assert.equal(inst?.leaseId, BigInt(`0x${leaseHex}`));
        }
      }
      // The lease revoked the way a Go service's would: all leave at once.
      await etcdctl(cluster.endpoints, ['lease', 'revoke', leaseHex]);
      await f.until('none left', (x) => x.instances.size === 0);
    } finally {
      await watcher.close();
    }
  });

  test(`${kind}: values not in Go's format are skipped and reported; the watcher goes on`, async () => {
    const service = 'bad';
    const skipped: string[] = [];
    const watcher = registry.watch(service, { onSkipped: (s) => skipped.push(s.key) });
    const f = new Follower(watcher);
    const session = await client.session({ ttlSeconds: 30 });
    try {
      await f.until('the snapshot', () => true);
      const good = await registry.register(service, '10.5.0.1:1', { session });
      const bad = fixture('not-go-endpoints.txt');
      for (const line of bad) {
        const key = line.key.replace(/^svc\//, `${service}/`);
        const r = await etcdctl(cluster.endpoints, ['put', '--', key, line.value.toString()]);
        assert.equal(r.code, 0, r.stderr);
      }
      // A valid instance overwritten with garbage leaves the set (Go's resolver would keep it).
      await client.kv.put(good.key, 'garbage');
      const later = await registry.register(service, '10.5.0.2:1', { session });
      const v = await f.until('the later instance', (x) => x.instances.has(later.key));
      assert.deepEqual([...v.instances.keys()], [later.key]);
      const reported = f.views.flatMap((x) => x.skipped);
      for (const line of bad) {
        const key = line.key.replace(/^svc\//, `${service}/`);
        const s = reported.find((x) => x.key === key);
        assert.equal(s?.why, line.rest[0], key);
      }
      assert.ok(reported.some((x) => x.key === good.key && x.why === 'not-json'));
      assert.ok(
        f.views.some((x) =>
          x.changes.some((c) => c.type === 'removed' && c.instance.key === good.key),
        ),
      );
      assert.equal(skipped.length, bad.length + 1);
      assert.equal(watcher.skippedTotal, bad.length + 1);
      const listed = await registry.list(service);
      assert.equal(listed.skipped.length, bad.length + 1);
      assert.deepEqual([...listed.instances.keys()], [later.key]);
    } finally {
      await watcher.close();
      await session.close();
    }
  });

  test(`${kind}: a compaction while the watcher is cut off: it re-reads, the set stays right`, async (t) => {
    const service = 'compact/svc';
    const session = await client.session({ ttlSeconds: 30 });
    const gate = await TcpRelay.open(cluster.endpoints[0] ?? assert.fail());
    const gated = await connect({ endpoints: [gate.endpoint] });
    const watcher = new Registry(gated).watch(service);
    const f = new Follower(watcher);
    try {
      const a = await registry.register(service, '10.6.0.1:1', { session });
      const b = await registry.register(service, '10.6.0.2:1', { session });
      await f.until('a and b', (v) => v.instances.has(a.key) && v.instances.has(b.key));
      gate.reset();
      // While the watcher cannot hear: one leaves, two join, one is rewritten, then the history
      // is compacted to now, so the watch cannot resume where it stopped.
      await a.unregister();
      const c = await registry.register(service, '10.6.0.3:1', { session });
      const d = await registry.register(service, '10.6.0.4:1', { session });
      await registry.register(service, '10.6.0.2:1', { session, metadata: { v: 2 } });
      const now = (await client.kv.put('compact/marker', '1')).header.revision;
      await client.kv.compact(now, { physical: true });
      gate.heal();
      const listed = await registry.list(service);
      const v = await f.until(
        'the set after the compaction',
        (x) =>
          x.instances.size === 3 &&
          [c.key, d.key].every((k) => x.instances.has(k)) &&
          x.instances.get(b.key)?.modRevision === listed.instances.get(b.key)?.modRevision,
      );
      assert.deepEqual(shape(v.instances), shape(listed.instances));
      assert.equal(v.source, 'resync');
      assert.ok(watcher.resyncs >= 1);
      assert.deepEqual(
        v.changes.map((ch) => `${ch.type} ${ch.instance.key}`).sort(),
        [`removed ${a.key}`, `added ${c.key}`, `added ${d.key}`, `updated ${b.key}`].sort(),
      );
      t.diagnostic(
        `${kind}: watcher resyncs ${watcher.resyncs}, last error ${String(watcher.lastError)}`,
      );
    } finally {
      await watcher.close();
      await gated.close();
      await gate.close();
      await session.close();
    }
  });
}
