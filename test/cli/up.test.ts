// `npm start` (`tenure up`) on a fresh clone: a real 3-member cluster in child processes that
// answers etcd clients, `--detach` returns and `tenure down` stops it by PID; the simulated
// cluster stays available as `up --simulated`; bad input gets a clear message.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../support/run-child.js';
import { freePorts } from '../../src/launcher/ports.js';
import { GrpcKv } from '../cluster/grpc-kv.js';
import { isAlive, readState } from '../../src/cli/local-cluster.js';

test('tenure up --detach starts a 3-member cluster that serves clients; tenure down stops it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-up-'));
  const ports = await freePorts(6);
  const client = ports.slice(0, 3).join(',');
  const peer = ports.slice(3).join(',');
  const dataDir = join(dir, '.tenure');
  try {
    const up = await runCli(
      ['up', '--detach', '--data-dir', dataDir, '--client-ports', client, '--peer-ports', peer],
      60_000,
    );
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /3-member cluster is up/);
    assert.match(up.stdout, /etcdctl --endpoints=/);
    assert.match(up.stdout, /tenure down/);
    const state = readState(dataDir);
    assert.ok(state);
    assert.ok(state.members.every((m) => isAlive(m.pid)));
    const kv = new GrpcKv(`http://127.0.0.1:${ports[1]}`);
    try {
      await kv.put('up-test', 'hello');
      const got = await kv.range('up-test');
      assert.equal(got[0]?.value, 'hello');
    } finally {
      kv.close();
    }
    // A second `up` on the same data dir refuses clearly.
    const again = await runCli(['up', '--detach', '--data-dir', dataDir], 30_000);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already running/);
    const down = await runCli(['down', '--data-dir', dataDir], 30_000);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, /stopped/);
    assert.ok(state.members.every((m) => !isAlive(m.pid)));
  } finally {
    const state = readState(dataDir);
    for (const m of state?.members ?? []) if (isAlive(m.pid)) process.kill(m.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tenure up --simulated runs the simulated cluster and exits 0', async () => {
  const r = await runCli(['up', '--simulated'], 120_000);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /all invariants held/);
  assert.match(r.stdout, /linearizable/);
});

test('tenure start and up reject bad input with a clear message', async () => {
  const r = await runCli(['start', '--initial-cluster-state', 'maybe'], 30_000);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--initial-cluster-state must be 'new' or 'existing'/);
  const c = await runCli(
    ['start', '--name', 'x', '--initial-cluster', 'y=http://127.0.0.1:1'],
    30_000,
  );
  assert.equal(c.code, 2);
  assert.match(c.stderr, /no member named 'x'/);
  const u = await runCli(['start', '--listen-client-urls', 'ftp://nowhere'], 30_000);
  assert.equal(u.code, 2);
  assert.match(u.stderr, /must use http:\/\//);
  const p = await runCli(['up', '--client-ports', '1,2,99999'], 30_000);
  assert.equal(p.code, 2);
  assert.match(p.stderr, /--client-ports must be ports/);
});

test('bin/tenure sim rejects bad input with a clear message', async () => {
  const r = await runCli(['sim', '--seeds', 'many'], 60_000);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--seeds must be a non-negative integer/);
  const m = await runCli(['sim', '--mutants', 'nosuchbug', '--seeds', '1'], 60_000);
  assert.equal(m.code, 2);
  assert.match(m.stderr, /unknown mutant 'nosuchbug'/);
});
