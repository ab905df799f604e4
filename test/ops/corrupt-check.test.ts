// etcd's corruption checks on a 3-member tenure cluster, with real processes. One follower is
// restarted with the planted bug `applyCorruptsValue` (TENURE_TEST_PLANTED_BUGS, which nothing
// sets outside tests): it stores every value it applies with the last byte changed, so its key
// space differs from the others' while its log is the same.
//
// - periodic (--experimental-corrupt-check-time): the leader's check raises a CORRUPT alarm for
//   that member; `etcdctl alarm list` shows it; then, as in etcd 3.4.23 (checked by hand against
//   it: an alarm raised for one member switches every member's applier), every member refuses
//   writes with DataLoss "etcdserver: corrupt cluster" and every member still serves reads (the
//   corrupted member its corrupted values); `etcdctl alarm disarm` lets writes through until the
//   next check raises it again.
// - initial (--experimental-initial-corrupt-check): the same member, restarted with the bug,
//   refuses to start ("found data inconsistency with peers"); without the bug it starts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cluster } from '../../src/launcher/cluster.js';
import { PLANTED_BUGS_ENV } from '../../src/server/planted-bugs.js';
import { etcdctl, startCluster } from '../cluster/cluster.js';
import { eventually, until } from '../support/poll.js';
import { fill, OpsClient, type Obj } from './ops-client.js';

const corruptEnv = { [PLANTED_BUGS_ENV]: 'applyCorruptsValue' };
/** How long the alarm may take: a few check intervals and a restart. */
const alarmWithinMs = 45_000;

/** A follower's index and its member ID in decimal (as etcdctl alarm list prints it). */
async function follower(cluster: Cluster): Promise<{ index: number; id: string }> {
  const leader = await cluster.waitReady(30_000);
  const index = (leader + 1) % cluster.size;
  const c = new OpsClient(cluster.endpoints[index] as string);
  try {
    const s = await c.ok('/etcdserverpb.Maintenance/Status', {});
    return { index, id: String((s['header'] as Obj)['member_id']) };
  } finally {
    c.close();
  }
}

test(
  'the leader raises CORRUPT for the member whose key space differs; writes stop',
  {
    timeout: 240_000,
  },
  async () => {
    let cluster: Cluster | undefined;
    const clients: OpsClient[] = [];
    try {
      cluster = await startCluster({
        kind: 'tenure',
        size: 3,
        extraArgs: ['--experimental-corrupt-check-time=1s'],
      });
      for (const e of cluster.endpoints) clients.push(new OpsClient(e));
      await fill(clients[0] as OpsClient, 'k', 50, (i) => `value-${i}`);
      const alarms = await etcdctl(cluster.endpoints, ['alarm', 'list']);
      assert.equal(alarms.stdout, '', 'no alarm while the key spaces agree');

      const bad = await follower(cluster);
      await cluster.kill(bad.index, 'SIGKILL');
      await cluster.restart(bad.index, corruptEnv);
      await cluster.waitReady(30_000);
      const line = `memberID:${bad.id} alarm:CORRUPT \n`;
      await eventually(
        'etcdctl alarm list shows CORRUPT for the corrupted member',
        async () => {
          const r = await etcdctl(cluster?.endpoints ?? [], ['alarm', 'list']);
          return r.stdout === line ? r : undefined;
        },
        alarmWithinMs,
      );
      assert.match(cluster.logTail(bad.index, 400), /planted bugs enabled/);

      for (const [i, c] of clients.entries()) {
        const put = await c.call('/etcdserverpb.KV/Put', { key: Buffer.from('after') });
        assert.deepEqual(
          put.error,
          { code: 15, details: 'etcdserver: corrupt cluster' },
          `member ${i} refuses writes (DataLoss)`,
        );
        const value = (await c.dump('k/00007'))[0] ?? '';
        const expected = i === bad.index ? /^k\/00007=value-6@/ : /^k\/00007=value-7@/;
        assert.match(value, expected, `member ${i} serves reads`);
        const status = await c.ok('/etcdserverpb.Maintenance/Status', {});
        assert.deepEqual(status['errors'], [line.trimEnd() + ' ']);
      }
      const lease = await clients[0]?.call('/etcdserverpb.Lease/LeaseGrant', { TTL: 60, ID: 0 });
      assert.equal(lease?.error?.details, 'etcdserver: corrupt cluster');

      const disarm = await etcdctl(cluster.endpoints, ['alarm', 'disarm']);
      assert.equal(disarm.stdout, line, 'disarm prints what it cleared');
      await clients[0]?.ok('/etcdserverpb.KV/Put', { key: Buffer.from('after'), value: 'ok' });
      // The member still differs: the next check raises the alarm again.
      await eventually(
        'the alarm raised again',
        async () => {
          const r = await etcdctl(cluster?.endpoints ?? [], ['alarm', 'list']);
          return r.stdout === line ? r : undefined;
        },
        alarmWithinMs,
      );
    } finally {
      for (const c of clients) c.close();
      await cluster?.stop();
    }
  },
);

test(
  'with the initial check, a member whose key space differs refuses to start',
  {
    timeout: 240_000,
  },
  async () => {
    let cluster: Cluster | undefined;
    try {
      cluster = await startCluster({
        kind: 'tenure',
        size: 3,
        extraArgs: ['--experimental-initial-corrupt-check'],
      });
      const c = new OpsClient(cluster.endpoints[0] as string);
      try {
        await fill(c, 'k', 50, (i) => `value-${i}`);
      } finally {
        c.close();
      }
      const bad = await follower(cluster);
      // Its peers must have every entry it will replay, or they answer "future revision".
      await cluster.kill(bad.index, 'SIGTERM');
      await cluster.restart(bad.index, corruptEnv);
      cluster.expectExit(bad.index);
      await until(
        'the corrupted member exits',
        () => cluster?.pids[bad.index] === undefined,
        60_000,
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${cluster?.logTail(bad.index, 60) ?? ''}`);
      });
      const tail = cluster.logTail(bad.index, 400);
      assert.match(tail, /found different hash values from remote peer/);
      assert.match(tail, /found data inconsistency with peers/);
      assert.match(tail, /exited with code 1/);

      // The same data without the planted bug agrees with the peers: it starts and serves.
      await cluster.restart(bad.index);
      await cluster.waitReady(30_000);
      assert.match(cluster.logTail(bad.index, 400), /initial corruption checking passed/);
      const alarms = await etcdctl(cluster.endpoints, ['alarm', 'list']);
      assert.equal(alarms.stdout, '');
    } finally {
      await cluster?.stop();
    }
  },
);
