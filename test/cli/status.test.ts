// `tenure status` against a real 3-member cluster: the table names the three members with
// their IDs, one leader (the one the cluster agrees on), term and indexes; the lease count and a
// lock taken with the SDK, with its holder key and the SDK's fencing token; `--json` says the
// same; a follower killed by PID shows as unreachable while the others still answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect, Lock, type Client } from '../../src/client/index.js';
import type { ClusterStatus } from '../../src/cli/status-report.js';
import { startCluster } from '../cluster/cluster.js';
import { GrpcKv } from '../cluster/grpc-kv.js';
import { eventually } from '../support/poll.js';
import { runCli } from '../support/run-child.js';

/** One `tenure status` run; it bounds each call at 2 s. */
const STATUS_BUDGET_MS = 30_000;

/** The cells of the table row whose first cell is `name`. */
function row(out: string, name: string): string[] | undefined {
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/))
    .find((cells) => cells[0] === name);
}

test('tenure status: members, leader, lag; leases and a lock with its token', async () => {
  const cluster = await startCluster({ kind: 'tenure', size: 3 });
  let client: Client | undefined;
  try {
    const leader = await cluster.waitReady();
    const names = cluster.names;
    const ids = await Promise.all(
      cluster.endpoints.map(async (e) => {
        const kv = new GrpcKv(e);
        try {
          return BigInt((await kv.status()).memberId).toString(16);
        } finally {
          kv.close();
        }
      }),
    );
    client = await connect({ endpoints: [...cluster.endpoints] });
    const session = await client.session({ ttlSeconds: 30 });
    const grant = await new Lock(client, session, 'status-test/lock').acquire();
    const endpoints = ['--endpoints', cluster.endpoints.join(',')];

    const r = await runCli(['status', ...endpoints], STATUS_BUDGET_MS);
    assert.equal(r.code, 0, r.stderr);
    const header = row(r.stdout, 'MEMBER');
    assert.deepEqual(header, [
      'MEMBER',
      'ID',
      'ENDPOINT',
      'ROLE',
      'TERM',
      'COMMIT',
      'APPLIED',
      'LAG',
      'PHI',
      'DB SIZE',
      'ALARMS',
    ]);
    const term = Number(row(r.stdout, names[leader] as string)?.[4]);
    assert.ok(term >= 1, r.stdout);
    names.forEach((name, i) => {
      const cells = row(r.stdout, name);
      assert.ok(cells !== undefined, `no row for ${name}:\n${r.stdout}`);
      assert.equal(cells[1], ids[i], `${name}'s ID`);
      assert.equal(cells[2], cluster.endpoints[i], `${name}'s endpoint`);
      assert.equal(cells[3], i === leader ? 'leader' : 'follower', `${name}'s role`);
      assert.equal(Number(cells[4]), term, `${name}'s term`);
      assert.ok(Number(cells[5]) >= 1 && Number(cells[6]) >= 1, `${name}'s indexes`);
      assert.match(cells[7] ?? '', /^\d+$/, `${name}'s lag`);
      // The leader's φ of each follower: a number, low while all is well.
      if (i === leader) assert.equal(cells[8], '-', 'the leader does not suspect itself');
      else assert.ok(Number(cells[8]) < 8, `${name}'s phi: ${cells[8] ?? ''}`);
      assert.equal(cells[10], '-', `${name} has no alarm`);
    });
    assert.match(r.stdout, /^leases: 1 {4}locks and elections: 1/m, r.stdout);
    const lock = row(r.stdout, 'status-test/lock');
    assert.deepEqual(lock, ['status-test/lock', 'lock', grant.key, grant.token.toString(), '0']);

    const j = await runCli(['status', '--json', ...endpoints], STATUS_BUDGET_MS);
    assert.equal(j.code, 0, j.stderr);
    const s = JSON.parse(j.stdout) as ClusterStatus;
    assert.equal(s.leader, ids[leader]);
    assert.deepEqual(
      s.members.map((m) => [m.name, m.role]),
      names.map((n, i) => [n, i === leader ? 'leader' : 'follower']),
    );
    assert.equal(s.leases?.count, 1);
    assert.equal(s.queues?.[0]?.holder.token, Number(grant.token));

    // A follower killed by its PID: unreachable, the others still there.
    const follower = (leader + 1) % cluster.size;
    await cluster.kill(follower, 'SIGKILL');
    const after = await eventually('status to show the killed member unreachable', async () => {
      const x = await runCli(['status', ...endpoints], STATUS_BUDGET_MS);
      return row(x.stdout, names[follower] as string)?.[3] === 'unreachable' ? x : undefined;
    });
    assert.equal(after.code, 0, after.stderr);
    assert.equal(row(after.stdout, names[leader] as string)?.[3], 'leader', after.stdout);
    await grant.release();
    await session.close();
  } finally {
    await client?.close();
    await cluster.stop();
  }
});
