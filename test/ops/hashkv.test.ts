// HashKV on a 3-member tenure cluster, with real processes: every member gives the same hash at
// each of several revisions (after puts, overwrites, deletes, a txn and a lease revoke), as
// `etcdctl endpoint hashkv --cluster` shows; after a compaction every member agrees again, and
// refuses the compacted revisions as etcd does; a member killed and restarted (its state rebuilt
// from its WAL) gives the same hashes as before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cluster } from '../../src/launcher/cluster.js';
import { etcdctl, startCluster } from '../cluster/cluster.js';
import { eventually } from '../support/poll.js';
import { fill, OpsClient, type Obj } from './ops-client.js';

/** Each member's HashKV answer at `revision`, once all have applied it. */
async function hashes(clients: readonly OpsClient[], revision: number): Promise<Obj[]> {
  return eventually(`every member at revision ${revision}`, async () => {
    const all = await Promise.all(clients.map((c) => c.hashKv(revision)));
    if (all.some((a) => a.error !== undefined)) return undefined;
    return all.map((a) => a.value as Obj);
  });
}

const same = (answers: readonly Obj[], field: string): boolean =>
  answers.every((a) => a[field] === answers[0]?.[field]);

test(
  'every member hashes alike at every revision, after compaction and a restart',
  {
    timeout: 240_000,
  },
  async () => {
    let cluster: Cluster | undefined;
    const clients: OpsClient[] = [];
    try {
      cluster = await startCluster({ kind: 'tenure', size: 3 });
      for (const e of cluster.endpoints) clients.push(new OpsClient(e));
      const c = clients[0] as OpsClient;
      const revisions: number[] = [];
      const mark = async (): Promise<void> => {
        const r = await c.ok('/etcdserverpb.KV/Range', { key: Buffer.from('-') });
        revisions.push(Number((r['header'] as Obj)['revision']));
      };
      await fill(c, 'a', 300, (i) => `v${i}`);
      await mark();
      for (let i = 0; i < 100; i++) await c.put(`a/${String(i).padStart(5, '0')}`, `w${i}`);
      await c.ok('/etcdserverpb.KV/DeleteRange', {
        key: Buffer.from('a/00200'),
        range_end: Buffer.from('a/00250'),
      });
      await mark();
      const grant = await c.ok('/etcdserverpb.Lease/LeaseGrant', { TTL: 600, ID: 0 });
      await c.put('leased', 'x', String(grant['ID']));
      await c.ok('/etcdserverpb.KV/Txn', {
        compare: [],
        success: [
          { request_put: { key: Buffer.from('t1'), value: Buffer.from('1') } },
          { request_delete_range: { key: Buffer.from('a/00001') } },
        ],
        failure: [],
      });
      await c.ok('/etcdserverpb.Lease/LeaseRevoke', { ID: grant['ID'] });
      await mark();

      const seen = new Map<number, unknown>();
      for (const rev of revisions) {
        const answers = await hashes(clients, rev);
        assert.ok(same(answers, 'hash'), `revision ${rev}: ${JSON.stringify(answers)}`);
        assert.ok(answers.every((a) => a['compact_revision'] === '-1'));
        seen.set(rev, answers[0]?.['hash']);
      }
      assert.equal(new Set(seen.values()).size, revisions.length, 'each revision its own hash');
      // etcdctl's view: one hash per member, all equal, at the current revision.
      const out = await etcdctl(
        [cluster.endpoints[0] as string],
        ['endpoint', 'hashkv', '--cluster', '-w', 'json'],
      );
      assert.equal(out.code, 0, out.stderr);
      const listed = JSON.parse(out.stdout) as { HashKV: { hash: number } }[];
      assert.equal(listed.length, 3);
      assert.equal(new Set(listed.map((l) => l.HashKV.hash)).size, 1);
      assert.equal(listed[0]?.HashKV.hash, seen.get(revisions[2] as number));

      // A compaction, applied everywhere: agreement again, and the old revisions refused.
      const compactAt = revisions[1] as number;
      await c.ok('/etcdserverpb.KV/Compact', { revision: compactAt, physical: true });
      const after = await eventually('every member compacted', async () => {
        const all = await hashes(clients, revisions[2] as number);
        return all.every((a) => a['compact_revision'] === String(compactAt)) ? all : undefined;
      });
      assert.ok(same(after, 'hash'), JSON.stringify(after));
      for (const m of clients) {
        const old = await m.hashKv(revisions[0] as number);
        assert.equal(old.error?.details, 'etcdserver: mvcc: required revision has been compacted');
        const future = await m.hashKv((revisions[2] as number) + 1000);
        assert.equal(
          future.error?.details,
          'etcdserver: mvcc: required revision is a future revision',
        );
      }

      // A member restarted from its data dir hashes as it did, and as the others do.
      const before = after[2]?.['hash'];
      await cluster.kill(2, 'SIGKILL');
      await cluster.restart(2);
      await cluster.waitReady(30_000);
      const again = await hashes(clients, revisions[2] as number);
      assert.ok(same(again, 'hash'));
      assert.equal(again[2]?.['hash'], before);
      assert.equal(again[2]?.['compact_revision'], String(compactAt));
    } finally {
      for (const c of clients) c.close();
      await cluster?.stop();
    }
  },
);
