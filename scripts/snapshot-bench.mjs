#!/usr/bin/env node
// How long a backup and a restore of a large store take: one tenure member filled to --mib MiB
// of values, `etcdctl snapshot save` from it, `tenure snapshot status` and `tenure snapshot
// restore` of the file, and a `tenure start` of the restored data dir until it serves every key.
// Not part of `npm test` (it takes minutes and GiB); run after `npm run build`:
//
//   node scripts/snapshot-bench.mjs --mib 256 [--value-bytes 4096] [--election-ms 10000]
//
// One JSON line per step on stdout, then one with everything. Every process it starts (the
// member, etcdctl, bin/tenure) is stopped by its PID; the data goes in a temporary directory
// that is removed at the end.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';

const root = new URL('..', import.meta.url).pathname;
const dist = (p) => join(root, 'dist', 'src', p);
const { startCluster } = await import(dist('launcher/cluster.js'));
const { freePorts } = await import(dist('launcher/ports.js'));
const { serviceDefinition } = await import(dist('server/api/protos.js'));

const { values: args } = parseArgs({
  options: {
    mib: { type: 'string', default: '100' },
    'value-bytes': { type: 'string', default: '4096' },
    // A member encodes a snapshot on its event loop; with a large store that can pass the
    // default election timeout (docs/operations.md, "Large snapshots").
    'election-ms': { type: 'string', default: '10000' },
    'heap-mib': { type: 'string', default: '16384' },
    concurrency: { type: 'string', default: '64' },
  },
});
const targetBytes = Number(args.mib) * 1024 * 1024;
const valueBytes = Number(args['value-bytes']);
const keys = Math.ceil(targetBytes / valueBytes);
const nodeArgs = [`--max-old-space-size=${args['heap-mib']}`];
const electionMs = Number(args['election-ms']);

const report = (step, fields) => process.stdout.write(`${JSON.stringify({ step, ...fields })}\n`);
const seconds = (t0) => Number(((performance.now() - t0) / 1000).toFixed(2));

function rssMiB(pid) {
  const r = spawnSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' });
  return Math.round(Number(r.stdout.trim()) / 1024);
}

/** Run a command to completion; its peak RSS from /usr/bin/time if there. */
function run(file, argv, budgetMs) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('/usr/bin/time', ['-f', '%M', file, ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), budgetMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = err.trim().split('\n');
      const peakKiB = Number(lines[lines.length - 1]);
      if (code !== 0) reject(new Error(`${file} ${argv.join(' ')}: exit ${code}\n${err}`));
      else resolve({ seconds: seconds(t0), stdout: out, peakRssMiB: Math.round(peakKiB / 1024) });
    });
  });
}

function client(endpoint) {
  const raw = new grpc.Client(endpoint.replace('http://', ''), grpc.credentials.createInsecure());
  const call = (service, name, req) => {
    const m = serviceDefinition(service)[name];
    return new Promise((resolve, reject) =>
      raw.makeUnaryRequest(
        m.path,
        (v) => m.requestSerialize(v),
        (b) => m.responseDeserialize(b),
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + 120_000 },
        (e, v) => (e ? reject(e) : resolve(v)),
      ),
    );
  };
  return { call, close: () => raw.close() };
}

const work = mkdtempSync(join(tmpdir(), 'tenure-snapshot-bench-'));
const clusters = [];
try {
  const command = { nodeArgs, electionTimeoutMs: electionMs, heartbeatIntervalMs: 100 };
  const source = await startCluster({ kind: 'tenure', size: 1, tmpRoot: work, command });
  clusters.push(source);
  const src = client(source.endpoints[0]);
  const value = Buffer.alloc(valueBytes, 0x61);
  let t0 = performance.now();
  let next = 0;
  let retries = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= keys) return;
      const key = Buffer.from(`bench/${String(i).padStart(9, '0')}`);
      // The member's own snapshots stall it (docs/compatibility.md, "Snapshots on the event
      // loop"): a put that timed out then is sent again (the same key and value: harmless).
      for (let attempt = 1; ; attempt++) {
        try {
          await src.call('etcdserverpb.KV', 'Put', { key, value });
          break;
        } catch (e) {
          if (e.code !== grpc.status.UNAVAILABLE || attempt >= 5) throw e;
          retries++;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Number(args.concurrency) }, worker));
  const status = await src.call('etcdserverpb.Maintenance', 'Status', {});
  report('fill', {
    keys,
    valueBytes,
    storeMiB: Math.round(Number(status.dbSize) / 2 ** 20),
    seconds: seconds(t0),
    putsRetried: retries,
    memberRssMiB: rssMiB(source.pids[0]),
  });
  const hash = await src.call('etcdserverpb.Maintenance', 'HashKV', { revision: 0 });
  src.close();

  const file = join(work, 'backup.db');
  const save = await run(
    'etcdctl',
    [`--endpoints=${source.endpoints[0]}`, '--command-timeout=600s', 'snapshot', 'save', file],
    1_800_000,
  );
  const fileMiB = Math.round(statSync(file).size / 2 ** 20);
  report('etcdctl snapshot save', {
    seconds: save.seconds,
    fileMiB,
    mibPerSecond: Math.round(fileMiB / save.seconds),
    memberRssMiB: rssMiB(source.pids[0]),
  });
  await source.stop();
  clusters.pop();

  const tenure = [process.execPath, ...nodeArgs, join(root, 'bin/tenure')];
  const st = await run(
    tenure[0],
    [...tenure.slice(1), 'snapshot', 'status', file, '--json'],
    1_800_000,
  );
  const s = JSON.parse(st.stdout);
  report('tenure snapshot status', {
    seconds: st.seconds,
    peakRssMiB: st.peakRssMiB,
    keys: s.totalKey,
  });
  if (s.hash !== hash.hash) throw new Error(`status hash ${s.hash}, member's HashKV ${hash.hash}`);

  const ports = await freePorts(2);
  const dir = join(work, 'restored');
  const peer = `http://127.0.0.1:${ports[1]}`;
  const restore = await run(
    tenure[0],
    [
      ...tenure.slice(1),
      'snapshot',
      'restore',
      file,
      '--data-dir',
      join(dir, 'n1'),
      '--name',
      'n1',
      '--initial-cluster',
      `n1=${peer}`,
      '--initial-cluster-token',
      'bench-restored',
      '--initial-advertise-peer-urls',
      peer,
      '--json',
    ],
    1_800_000,
  );
  report('tenure snapshot restore', { seconds: restore.seconds, peakRssMiB: restore.peakRssMiB });

  t0 = performance.now();
  const spawnedAtMs = Date.now();
  const restored = await startCluster({
    kind: 'tenure',
    size: 1,
    dir,
    ports: { client: [ports[0]], peer: [ports[1]] },
    token: 'bench-restored',
    memberName: () => 'n1',
    command,
    readyTimeoutMs: 1_800_000,
  });
  clusters.push(restored);
  const startSeconds = seconds(t0);
  const r = client(restored.endpoints[0]);
  const count = await r.call('etcdserverpb.KV', 'Range', {
    key: Buffer.from('bench/'),
    range_end: Buffer.from('bench0'),
    count_only: true,
  });
  const h2 = await r.call('etcdserverpb.Maintenance', 'HashKV', { revision: 0 });
  r.close();
  if (Number(count.count) !== keys) throw new Error(`restored ${count.count} keys of ${keys}`);
  if (h2.hash !== hash.hash) throw new Error('the restored member hashes differently');
  // When the member had read its snapshot and data dir (its 'member started' line), apart from
  // the wait for its first election, which the election timeout sets.
  const started = readFileSync(restored.logFiles[0], 'utf8')
    .split('\n')
    .filter((l) => l.includes('"member started"'))
    .map((l) => JSON.parse(l).time)[0];
  report('tenure start (restored)', {
    secondsUntilRecovered: Number(((started - spawnedAtMs) / 1000).toFixed(2)),
    secondsUntilReady: startSeconds,
    keys: Number(count.count),
    memberRssMiB: rssMiB(restored.pids[0]),
  });
} finally {
  for (const c of clusters) await c.stop();
  rmSync(work, { recursive: true, force: true });
}
