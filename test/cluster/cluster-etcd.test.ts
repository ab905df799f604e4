// The cluster harness itself, on real etcd: ports, readiness, kill and restart with the same flags
// (including --initial-cluster-state=new, which etcd ignores once the data dir is initialised),
// diagnostics on failure, and cleanup of processes and data.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { etcdctl, startCluster } from './cluster.js';
import { freePorts } from '../../src/launcher/ports.js';

async function ok(endpoints: readonly string[], args: readonly string[]): Promise<string> {
  const r = await etcdctl(endpoints, args);
  assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('freePorts returns distinct ports', async () => {
  const ports = await freePorts(12);
  assert.equal(new Set(ports).size, 12);
  for (const p of ports) assert.ok(p > 0 && p < 65536);
});

test('a 1-member etcd serves, then stop() ends the process and removes the data', async () => {
  const cluster = await startCluster({ kind: 'etcd', size: 1 });
  const pid = cluster.pids[0];
  const dir = cluster.dataDirs[0];
  assert.ok(pid !== undefined && dir !== undefined);
  assert.match(cluster.endpoints[0] ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(await ok(cluster.endpoints, ['put', 'a', '1']), 'OK\n');
  assert.equal(await ok(cluster.endpoints, ['get', 'a', '--print-value-only']), '1\n');
  await cluster.stop();
  assert.deepEqual(cluster.pids, [undefined]);
  assert.equal(existsSync(dir), false, 'data directory removed');
  assert.throws(() => process.kill(pid, 0), 'the process is gone');
});

test('kill and restart a member of 3: it rejoins with its data and its member ID', async () => {
  const cluster = await startCluster({ kind: 'etcd', size: 3 });
  try {
    const members = await ok(cluster.endpoints, ['member', 'list']);
    await ok(cluster.endpoints, ['put', 'before', '1']);
    await cluster.kill(0, 'SIGKILL');
    assert.equal(cluster.pids[0], undefined);
    const survivors = cluster.endpoints.slice(1);
    await cluster.waitReady(30_000);
    await ok(survivors, ['put', 'during', '2']);

    await cluster.restart(0);
    assert.ok(cluster.pids[0] !== undefined);
    await cluster.waitReady(30_000);
    const first = cluster.endpoints.slice(0, 1);
    // A linearizable read through the restarted member sees the write made while it was down.
    assert.equal(await ok(first, ['get', 'during', '--print-value-only']), '2\n');
    assert.equal(await ok(first, ['get', 'before', '--print-value-only']), '1\n');
    assert.equal(await ok(cluster.endpoints, ['member', 'list']), members, 'same members');
    assert.match(cluster.logTail(0, 400), /\[harness\] restart/);
  } finally {
    await cluster.stop();
  }
});

test('waitReady fails with each member’s state and last output', async () => {
  const cluster = await startCluster({ kind: 'etcd', size: 3, readyTimeoutMs: 0 });
  try {
    await cluster.waitReady(30_000);
    await cluster.kill(1, 'SIGKILL');
    await cluster.kill(2, 'SIGKILL');
    // One member of three has no quorum: it cannot serve a linearizable read.
    await assert.rejects(cluster.waitReady(1_500), (e: unknown) => {
      const text = e instanceof Error ? e.message : String(e);
      assert.match(text, /etcd cluster of 3 not ready after 1500 ms/);
      assert.match(text, /--- member 0 n0 http:\/\/127\.0\.0\.1:\d+ \(running pid \d+\)/);
      assert.match(text, /--- member 1 n1 .*\(not running\)/);
      assert.match(text, /\[harness\] exited with code null signal SIGKILL/);
      return true;
    });
  } finally {
    await cluster.stop();
  }
});
