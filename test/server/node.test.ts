// Three EtcdNodes in one process on loopback (real disks in a temp dir, real TCP, real timers, no
// client API): a leader is elected, writes through any member are applied everywhere, a
// follower's write is forwarded, lease commands carry the leader's clock, a member restarted from
// its data dir has every write, and MemberList shows the published client URLs.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { freePorts } from '../../src/launcher/ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { EtcdResult } from '../../src/core/state/etcd-machine.js';
import type { Clock } from '../../src/replica/io.js';
import { monotonicClock } from '../../src/server/clock.js';
import { EtcdNode, type NodeConfig, type NodeLogger } from '../../src/server/node.js';
import { until } from '../support/poll.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
function offsetClock(offsetMs: number): Clock {
  return { ...monotonicClock, nowMs: () => monotonicClock.nowMs() + offsetMs };
}

const quiet: NodeLogger = { info: () => {}, warn: () => {}, error: () => {} };

const root = mkdtempSync(join(tmpdir(), 'tenure-node-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function configs(n: number): Promise<NodeConfig[]> {
  const ports = await freePorts(n);
  const initialCluster = ports.map((p, i) => ({
    name: `n${i + 1}`,
    peerUrls: [`http://127.0.0.1:${p}`],
  }));
  const dir = mkdtempSync(join(root, 'c-'));
  return ports.map((p, i) => ({
    name: `n${i + 1}`,
    dataDir: join(dir, `n${i + 1}`),
    listenPeer: { host: '127.0.0.1', port: p },
    advertiseClientUrls: [`http://127.0.0.1:${40000 + i}`],
    initialCluster,
    initialClusterState: 'new' as const,
    initialClusterToken: 'node-test',
    heartbeatMs: 50,
    electionMs: 500,
    snapshotCount: 50,
    requestTimeoutMs: 5000,
    log: quiet,
    // Each member's monotonic clock reads very differently, as on separate machines: lease
    // deadlines are only correct if the leader alone stamps and judges them.
    clock: offsetClock((i - 1) * 1_000_000),
  }));
}

function put(node: EtcdNode, key: string, value: string): Promise<EtcdResult> {
  return node.member.propose({
    type: 'put',
    request: { key: enc.encode(key), value: enc.encode(value) },
  });
}

function get(node: EtcdNode, key: string): string | undefined {
  const r = node.member.machine.range({ key: enc.encode(key) });
  assert.ok('kvs' in r);
  const kv = r.kvs[0];
  return kv ? dec.decode(kv.value) : undefined;
}

test('a 3-member cluster elects a leader, forwards follower writes and survives restarts', async () => {
  const cfgs = await configs(3);
  let nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    const leader = nodes.find((n) => n.isLeader);
    const follower = nodes.find((n) => !n.isLeader);
    assert.ok(leader && follower);
    await until('every member knows the leader', () => nodes.every((n) => n.member.hasLeader()));

    const r1 = await put(leader, 'a', '1');
    assert.equal(r1.type, 'put');
    // Through a follower: forwarded, and applied on the follower before the answer.
    const r2 = await put(follower, 'b', '2');
    assert.equal(r2.type, 'put');
    assert.equal(get(follower, 'b'), '2');
    await follower.member.readBarrier();
    assert.equal(get(follower, 'a'), '1');

    // Leases: granted through a follower, TTL read from the leader's clock.
    const g = await follower.member.propose({
      type: 'leaseGrant',
      id: 0n,
      ttlSeconds: 30,
      nowMs: 0,
    });
    assert.equal(g.type, 'leaseGrant');
    if (g.type !== 'leaseGrant') return;
    const ttl = await follower.member.leaseTimeToLive(g.response.id, false);
    assert.ok(ttl.ttlSeconds >= 28 && ttl.ttlSeconds <= 30, `ttl ${ttl.ttlSeconds}`);
    const ka = await follower.member.leaseKeepAlive(g.response.id);
    assert.equal(ka.ttlSeconds, 30);
    const unknown = await follower.member.leaseKeepAlive(12345n);
    assert.equal(unknown.ttlSeconds, 0);

    // Enough writes to take snapshots (snapshotCount 50), then restart everyone from disk.
    for (let i = 0; i < 120; i++) await put(nodes[i % 3] as EtcdNode, `k${i % 7}`, `v${i}`);
    const revision = leader.member.machine.revision;
    await until('members list their client URLs', () =>
      nodes.every((n) => n.member.members().every((m) => m.clientUrls.length === 1)),
    );
    assert.deepEqual(
      leader.member
        .members()
        .map((m) => m.name)
        .sort(),
      ['n1', 'n2', 'n3'],
    );
    await Promise.all(nodes.map((n) => n.stop()));
    nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
    await until('a leader after restart', () => nodes.some((n) => n.isLeader));
    const again = nodes.find((n) => n.isLeader) as EtcdNode;
    await again.member.readBarrier();
    assert.ok(again.member.machine.revision >= revision);
    for (const n of nodes) {
      await n.member.readBarrier();
      assert.equal(get(n, 'a'), '1');
      assert.equal(get(n, 'b'), '2');
      assert.equal(get(n, 'k6'), 'v118');
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
  }
});

test('a lease expires through a revoke the leader proposes, deleting its keys', async () => {
  const cfgs = await configs(3);
  const nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    const n = nodes[0] as EtcdNode;
    const g = await n.member.propose({ type: 'leaseGrant', id: 0n, ttlSeconds: 1, nowMs: 0 });
    assert.equal(g.type, 'leaseGrant');
    if (g.type !== 'leaseGrant') return;
    // The minimum TTL is raised as etcd does.
    const id = g.response.id;
    await n.member.propose({
      type: 'put',
      request: { key: enc.encode('eph'), value: enc.encode('x'), lease: id },
    });
    assert.equal(get(n, 'eph'), 'x');
    await until('the leased key to vanish on every member', () =>
      nodes.every((m) => get(m, 'eph') === undefined),
    );
    const ttl = await n.member.leaseTimeToLive(id, false);
    assert.equal(ttl.ttlSeconds, -1);
  } finally {
    await Promise.all(nodes.map((m) => m.stop()));
  }
});

test('a member added at run time joins from a snapshot, serves, and can be removed', async () => {
  const cfgs = await configs(4);
  const three = cfgs
    .slice(0, 3)
    .map((c) => ({ ...c, initialCluster: c.initialCluster.slice(0, 3) }));
  const nodes = await Promise.all(three.map((c) => EtcdNode.start(c)));
  let joiner: EtcdNode | undefined;
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    for (let i = 0; i < 30; i++) await put(nodes[i % 3] as EtcdNode, `j${i % 5}`, `v${i}`);
    const fourth = cfgs[3] as NodeConfig;
    const follower = nodes.find((n) => !n.isLeader) as EtcdNode;
    // Through a follower: forwarded to the leader.
    const added = await follower.member.memberAdd(fourth.initialCluster[3]?.peerUrls ?? [], false);
    // As `etcdctl member add` instructs: no --initial-cluster-token (so the default one).
    joiner = await EtcdNode.start({
      ...fourth,
      initialClusterState: 'existing',
      initialClusterToken: 'etcd-cluster',
    });
    const j = joiner;
    await until(
      'the new member to catch up',
      () => j.member.machine.revision === follower.member.machine.revision,
    );
    assert.equal(joiner.member.clusterId, follower.member.clusterId);
    assert.equal(get(joiner, 'j4'), 'v29');
    await put(joiner, 'from-joiner', 'yes');
    assert.equal(get(joiner, 'from-joiner'), 'yes');
    await until('four members everywhere', () =>
      nodes.every((n) => n.member.members().length === 4),
    );
    await assert.rejects(
      follower.member.memberAdd(fourth.initialCluster[3]?.peerUrls ?? [], false),
      {
        message: 'etcdserver: Peer URLs already exists',
      },
    );
    await follower.member.memberRemove(added.id);
    await until('three members again', () => nodes.every((n) => n.member.members().length === 3));
    await assert.rejects(follower.member.memberRemove(added.id), {
      message: 'etcdserver: member not found',
    });
    await put(follower, 'after-remove', 'ok');
  } finally {
    await Promise.all([...nodes, ...(joiner ? [joiner] : [])].map((n) => n.stop()));
  }
});

test('keepalives on the leader keep a lease alive without log entries; then it expires', async () => {
  const cfgs = await configs(3);
  const nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    const follower = nodes.find((n) => !n.isLeader) as EtcdNode;
    const g = await follower.member.propose({
      type: 'leaseGrant',
      id: 0n,
      ttlSeconds: 2,
      nowMs: 0,
    });
    assert.ok(g.type === 'leaseGrant');
    const id = g.response.id;
    await follower.member.propose({
      type: 'put',
      request: { key: enc.encode('kept'), value: enc.encode('x'), lease: id },
    });
    const indexBefore = follower.member.status().raftIndex;
    // Renew every 500 ms for two TTLs: the key must stay.
    const renewUntil = performance.now() + 4000;
    while (performance.now() < renewUntil) {
      const ka = await follower.member.leaseKeepAlive(id);
      assert.equal(ka.ttlSeconds, 2);
      assert.equal(get(follower, 'kept'), 'x');
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(follower.member.status().raftIndex - indexBefore < 4, 'renewals are not log entries');
    const ttl = await follower.member.leaseTimeToLive(id, false);
    assert.ok(ttl.ttlSeconds >= 1, `remaining ${ttl.ttlSeconds}`);
    await until('the lease to expire once renewals stop', () =>
      nodes.every((n) => get(n, 'kept') === undefined),
    );
    assert.equal((await follower.member.leaseKeepAlive(id)).ttlSeconds, 0);
  } finally {
    await Promise.all(nodes.map((m) => m.stop()));
  }
});

test("a lease revoked and granted again under its ID has only the new grant's TTL", async () => {
  const cfgs = await configs(3);
  const nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    const follower = nodes.find((n) => !n.isLeader) as EtcdNode;
    const grant = (ttlSeconds: number) =>
      follower.member.propose({ type: 'leaseGrant', id: 777n, ttlSeconds, nowMs: 0 });
    assert.equal((await grant(60)).type, 'leaseGrant');
    // A renewal on the leader: a deadline 60 s away, kept by the leader alone.
    assert.equal((await follower.member.leaseKeepAlive(777n)).ttlSeconds, 60);
    await follower.member.propose({ type: 'leaseRevoke', id: 777n });
    assert.equal((await grant(5)).type, 'leaseGrant');
    // The old renewal is not the new lease's: its remaining TTL is the new grant's.
    const ttl = await follower.member.leaseTimeToLive(777n, false);
    assert.equal(ttl.grantedTtlSeconds, 5);
    assert.ok(ttl.ttlSeconds <= 5, `remaining ${ttl.ttlSeconds} s of a 5 s lease`);
  } finally {
    await Promise.all(nodes.map((m) => m.stop()));
  }
});
