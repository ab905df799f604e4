// A follower of a 300 MiB store catches up from a snapshot: three EtcdNodes in one process on
// loopback (real disks, real TCP), 300 MiB of 1 MiB values, one follower removed, its data dir
// wiped, and the member added again and started empty while writes go on. Its snapshot is far
// past the 64 MiB a WAL record or a peer frame holds, so it is written and sent in binary, on a
// connection of its own, in chunks (src/core/state/snapshot-codec.ts, src/server/peer-snapshots.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePorts } from '../../src/launcher/ports.js';
import { EtcdNode, type NodeConfig, type NodeLogger } from '../../src/server/node.js';
import { until } from '../support/poll.js';

const STORE_MIB = 300;
const VALUE_BYTES = 1024 * 1024;
/** Puts in flight while the store fills. */
const WRITERS = 4;
/** A hang guard for the fill and the catch-up, not a speed check. */
const CATCH_UP_TIMEOUT_MS = 240_000;

const enc = new TextEncoder();
const quiet: NodeLogger = { info: () => {}, warn: () => {}, error: () => {} };
const root = mkdtempSync(join(tmpdir(), 'tenure-large-snapshot-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function configs(): Promise<NodeConfig[]> {
  const ports = await freePorts(3);
  const initialCluster = ports.map((p, i) => ({
    name: `n${i + 1}`,
    peerUrls: [`http://127.0.0.1:${p}`],
  }));
  return ports.map((p, i) => ({
    name: `n${i + 1}`,
    dataDir: join(root, `n${i + 1}`),
    listenPeer: { host: '127.0.0.1', port: p },
    advertiseClientUrls: [`http://127.0.0.1:${41000 + i}`],
    initialCluster,
    initialClusterState: 'new' as const,
    initialClusterToken: 'large-snapshot-test',
    // Taking, writing and restoring a snapshot this size holds the event loop for 1–3 s here
    // (docs/compatibility.md), and all three members share this process's loop: an election
    // timeout above that keeps the test about catching up, not about elections.
    heartbeatMs: 100,
    electionMs: 8000,
    // No periodic snapshot: the one under test is the leader's, before the member is added.
    snapshotCount: 1_000_000,
    requestTimeoutMs: 30_000,
    log: quiet,
  }));
}

test(`a wiped follower of a ${STORE_MIB} MiB store catches up while writes go on`, async () => {
  const cfgs = await configs();
  const nodes = await Promise.all(cfgs.map((c) => EtcdNode.start(c)));
  let rejoined: EtcdNode | undefined;
  try {
    await until('a leader', () => nodes.some((n) => n.isLeader));
    const leader = nodes.find((n) => n.isLeader) as EtcdNode;
    const value = new Uint8Array(VALUE_BYTES);
    for (let i = 0; i < value.length; i += 4096) value[i] = i & 0xff;
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < STORE_MIB) {
          const i = next++;
          const key = enc.encode(`big/${String(i).padStart(4, '0')}`);
          await leader.member.propose({ type: 'put', request: { key, value } });
        }
      }),
    );
    const follower = nodes.find((n) => !n.isLeader) as EtcdNode;
    const index = nodes.indexOf(follower);
    const cfg = cfgs[index] as NodeConfig;
    const self = leader.member.members().find((m) => m.name === cfg.name);
    assert.ok(self, 'the follower is in the member list');
    await leader.member.memberRemove(self.id);
    await follower.stop();
    rmSync(cfg.dataDir, { recursive: true, force: true });

    // Writes go on through the join and the catch-up.
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await leader.member.propose({
          type: 'put',
          request: { key: enc.encode(`small/${written % 50}`), value: enc.encode(`${written}`) },
        });
        written++;
        // Let the catch-up's I/O in between writes.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    await leader.member.memberAdd(cfg.initialCluster[index]?.peerUrls ?? [], false);
    rejoined = await EtcdNode.start({
      ...cfg,
      initialClusterState: 'existing',
      initialClusterToken: 'etcd-cluster',
    });
    const r = rejoined;
    await until(
      'the wiped member to hold the whole store',
      () => r.member.machine.revision > STORE_MIB && written > 0,
      CATCH_UP_TIMEOUT_MS,
    );
    writing = false;
    await writer;
    await until(
      'the wiped member to apply the last write',
      () => r.member.machine.revision === leader.member.machine.revision,
      CATCH_UP_TIMEOUT_MS,
    );
    assert.equal(r.member.machine.digest(), leader.member.machine.digest(), 'the same state');
    const last = r.member.machine.range({
      key: enc.encode(`big/${String(STORE_MIB - 1).padStart(4, '0')}`),
    });
    assert.ok('kvs' in last);
    assert.equal(last.kvs[0]?.value.length, VALUE_BYTES);
    const snapBytes = statSync(join(cfg.dataDir, 'snap')).size;
    assert.ok(
      snapBytes > STORE_MIB * VALUE_BYTES,
      `the member restored a ${STORE_MIB} MiB snapshot (its file has ${snapBytes} bytes)`,
    );
    console.log(
      `large snapshot: ${(snapBytes / 2 ** 20).toFixed(1)} MiB on disk, ${written} writes during the catch-up`,
    );
  } finally {
    await Promise.all([...nodes, ...(rejoined ? [rejoined] : [])].map((n) => n.stop()));
  }
});
