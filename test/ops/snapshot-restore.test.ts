// Backup and restore end to end, with real processes: `etcdctl snapshot save` (Debian's 3.4.23)
// from one member of a 3-member tenure cluster holding 2,000 keys with history, a lease with a
// key on it, and auth (root, and a user whose role reads one prefix); `tenure snapshot status`
// of the file; `tenure snapshot restore` into three new data directories for new peer URLs and
// token; `tenure start` on them. The new cluster has its own ID and members, and serves every
// key with its revisions, the lease with its TTL and key, and the users, roles and permissions.
// Then the refusals: a damaged file, a cut one, an etcd (bbolt) snapshot, a used data dir.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startCluster as launch, type Cluster } from '../../src/launcher/cluster.js';
import { freePorts } from '../../src/launcher/ports.js';
import { etcdctl, startCluster } from '../cluster/cluster.js';
import { runCli } from '../support/run-child.js';
import { fill, OpsClient, type Obj } from './ops-client.js';

/** A restore or status of a small file: far above what it takes. */
const cliBudgetMs = 60_000;

async function ok(endpoints: readonly string[], args: readonly string[]): Promise<string> {
  const r = await etcdctl(endpoints, args);
  assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const header = (o: Obj): Obj => o['header'] as Obj;

test(
  'etcdctl snapshot save from tenure, tenure snapshot restore: a new cluster with it all',
  { timeout: 300_000 },
  async () => {
    const work = mkdtempSync(join(tmpdir(), 'tenure-restore-'));
    const file = join(work, 'backup.db');
    let source: Cluster | undefined;
    let restored: Cluster | undefined;
    const clients: OpsClient[] = [];
    try {
      source = await startCluster({ kind: 'tenure', size: 3 });
      const src = new OpsClient(source.endpoints[0] as string);
      clients.push(src);
      // 2,000 keys, 300 of them written twice and 100 deleted: history for the revisions.
      await fill(src, 'k', 2000, (i) => `value-${i}`);
      for (let i = 0; i < 300; i++) await src.put(`k/${String(i).padStart(5, '0')}`, `again-${i}`);
      for (let i = 1900; i < 2000; i++)
        await src.ok('/etcdserverpb.KV/DeleteRange', { key: Buffer.from(`k/${i}`) });
      const grant = await src.ok('/etcdserverpb.Lease/LeaseGrant', { TTL: 600, ID: 0 });
      const leaseId = String(grant['ID']);
      await src.put('leased/a', 'on-a-lease', leaseId);
      const eps = source.endpoints;
      await ok(eps, ['user', 'add', 'root:rootpw']);
      await ok(eps, ['role', 'add', 'root']);
      await ok(eps, ['user', 'grant-role', 'root', 'root']);
      await ok(eps, ['user', 'add', 'alice:alicepw']);
      await ok(eps, ['role', 'add', 'reader']);
      await ok(eps, ['role', 'grant-permission', 'reader', 'read', 'k/', '--prefix']);
      await ok(eps, ['user', 'grant-role', 'alice', 'reader']);
      await ok(eps, ['auth', 'enable']);
      await src.login('root', 'rootpw');
      const before = await src.dump('k/');
      assert.equal(before.length, 2000, 'the 100 deletes hit keys never written (k/1900…)');
      const beforeLeased = await src.dump('leased/');
      const hash = await src.ok('/etcdserverpb.Maintenance/HashKV', { revision: 0 });
      const revision = Number(header(hash)['revision']);
      const sourceCluster = String(header(hash)['cluster_id']);

      // Not root: refused as etcd refuses it.
      const one = [source.endpoints[1] as string];
      const denied = await etcdctl(one, ['--user', 'alice:alicepw', 'snapshot', 'save', file]);
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /code = Unknown desc = auth: permission denied/);
      const saved = await etcdctl(one, ['--user', 'root:rootpw', 'snapshot', 'save', file]);
      assert.equal(saved.code, 0, saved.stderr);
      assert.match(saved.stdout, /Snapshot saved at/);

      const status = await runCli(['snapshot', 'status', file, '--json'], cliBudgetMs);
      assert.equal(status.code, 0, status.stderr);
      const s = JSON.parse(status.stdout) as Obj;
      assert.equal(s['revision'], revision);
      assert.equal(s['hash'], hash['hash'], "the file's hash is the member's HashKV then");
      assert.equal(s['totalKey'], 2001);
      assert.equal(s['leases'], 1);
      assert.equal(s['authEnabled'], true);
      assert.equal(s['users'], 2);
      assert.deepEqual(s['members'], ['n0', 'n1', 'n2']);
      assert.equal(s['totalSize'], readFileSync(file).length);

      // Three new members on new ports and a new token.
      const ports = await freePorts(6);
      const peer = (i: number): string => `http://127.0.0.1:${ports[3 + i]}`;
      const names = ['n0', 'n1', 'n2'];
      const initialCluster = names.map((n, i) => `${n}=${peer(i)}`).join(',');
      const dir = join(work, 'restored');
      for (const [i, name] of names.entries()) {
        const r = await runCli(
          [
            'snapshot',
            'restore',
            file,
            '--data-dir',
            join(dir, name),
            '--name',
            name,
            '--initial-cluster',
            initialCluster,
            '--initial-cluster-token',
            'restored-token',
            '--initial-advertise-peer-urls',
            peer(i),
            '--json',
          ],
          cliBudgetMs,
        );
        assert.equal(r.code, 0, r.stderr);
        assert.equal((JSON.parse(r.stdout) as Obj)['index'], s['appliedIndex']);
      }
      restored = await launch({
        kind: 'tenure',
        size: 3,
        dir,
        ports: { client: ports.slice(0, 3), peer: ports.slice(3) },
        token: 'restored-token',
        memberName: (i) => names[i] as string,
        logs: 'ring',
        keepNodeOptions: true,
      });

      for (const endpoint of restored.endpoints) {
        const c = new OpsClient(endpoint);
        clients.push(c);
        // Auth came back: no user, no reads; root reads everything it read before.
        const anon = await c.call('/etcdserverpb.KV/Range', { key: Buffer.from('k/00001') });
        assert.equal(anon.error?.details, 'etcdserver: user name is empty');
        await c.login('root', 'rootpw');
        assert.deepEqual(await c.dump('k/'), before, `every key, at ${endpoint}`);
        assert.deepEqual(await c.dump('leased/'), beforeLeased);
        const h = await c.ok('/etcdserverpb.Maintenance/HashKV', { revision });
        assert.equal(h['hash'], hash['hash'], 'HashKV at the saved revision agrees');
        assert.notEqual(String(header(h)['cluster_id']), sourceCluster, 'a new cluster ID');
      }
      const c = clients[clients.length - 1] as OpsClient;
      const members = await ok(restored.endpoints, ['--user', 'root:rootpw', 'member', 'list']);
      for (let i = 0; i < 3; i++) assert.match(members, new RegExp(`n${i}, ${peer(i)}, `));
      // The lease: its granted TTL, its key, a deadline refreshed by the new leader.
      const ttl = await c.ok('/etcdserverpb.Lease/LeaseTimeToLive', { ID: leaseId, keys: true });
      assert.equal(ttl['grantedTTL'], '600');
      assert.ok(Number(ttl['TTL']) > 500, `TTL ${String(ttl['TTL'])}`);
      assert.deepEqual(
        (ttl['keys'] as Buffer[]).map((k) => k.toString()),
        ['leased/a'],
      );
      // alice's role: reads k/, writes nothing.
      const asAlice = ['--user', 'alice:alicepw'];
      assert.equal(
        await ok(restored.endpoints, [...asAlice, 'get', 'k/00001', '--print-value-only']),
        'again-1\n',
      );
      const write = await etcdctl(restored.endpoints, [...asAlice, 'put', 'k/00001', 'x']);
      assert.match(write.stderr, /etcdserver: permission denied/);
      // Writes go on from the saved revision.
      const put = await c.put('after', 'restore');
      assert.equal(Number(header(put)['revision']), revision + 1);
    } finally {
      for (const c of clients) c.close();
      await restored?.stop();
      await source?.stop();
      rmSync(work, { recursive: true, force: true });
    }
  },
);

test('a damaged, cut or etcd snapshot, and a used data dir, are refused', async () => {
  const work = mkdtempSync(join(tmpdir(), 'tenure-restore-bad-'));
  let tenure: Cluster | undefined;
  let etcd: Cluster | undefined;
  try {
    tenure = await startCluster({ kind: 'tenure', size: 1 });
    etcd = await startCluster({ kind: 'etcd', size: 1 });
    const c = new OpsClient(tenure.endpoints[0] as string);
    try {
      await fill(c, 'k', 200, (i) => `v${i}`);
    } finally {
      c.close();
    }
    const good = join(work, 'good.db');
    await ok(tenure.endpoints, ['snapshot', 'save', good]);
    const etcdFile = join(work, 'etcd.db');
    await ok(etcd.endpoints, ['put', 'a', '1']);
    await ok(etcd.endpoints, ['snapshot', 'save', etcdFile]);
    const bytes = readFileSync(good);
    const flipped = Buffer.from(bytes);
    flipped[Math.floor(bytes.length / 2)] = (flipped[Math.floor(bytes.length / 2)] as number) ^ 1;
    writeFileSync(join(work, 'flipped.db'), flipped);
    writeFileSync(join(work, 'cut.db'), bytes.subarray(0, bytes.length - 100));

    const restore = (fileName: string, dataDir: string) =>
      runCli(
        ['snapshot', 'restore', join(work, fileName), '--data-dir', join(work, dataDir)],
        cliBudgetMs,
      );
    const cases: [string, RegExp][] = [
      ['flipped.db', /sha256 mismatch: .*the file is damaged/],
      ['cut.db', /sha256 checksum not found \[bytes: \d+\]/],
      ['etcd.db', /not a tenure snapshot .*etcdctl snapshot restore/],
    ];
    for (const [name, why] of cases) {
      const r = await restore(name, `dir-${name}`);
      assert.equal(r.code, 1, `${name}: ${r.stdout}`);
      assert.match(r.stderr, why, name);
      assert.equal(existsSync(join(work, `dir-${name}`)), false, `${name}: nothing written`);
      const st = await runCli(['snapshot', 'status', join(work, name)], cliBudgetMs);
      assert.equal(st.code, 1);
      assert.match(st.stderr, why);
    }
    const first = await restore('good.db', 'used');
    assert.equal(first.code, 0, first.stderr);
    const again = await restore('good.db', 'used');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /data-dir ".*used" not empty or could not be read/);
    // And etcd's own restore does not take tenure's file (it is not bbolt).
    const theirs = await etcdctl(
      [],
      ['snapshot', 'restore', good, '--data-dir', join(work, 'etcd-restore')],
    );
    assert.notEqual(theirs.code, 0);
  } finally {
    await etcd?.stop();
    await tenure?.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
