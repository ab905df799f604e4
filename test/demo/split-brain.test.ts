// `tenure demo split-brain` end to end, as a user runs it: the JSON report's shape and verdicts
// (the fenced store refused every stale write, the unfenced one took some and mixed the record),
// the timeline on stderr, and every process it started gone afterwards. Then the same against a
// running cluster (`--endpoints`) with the PostgreSQL store, and bad usage.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pidsIn, alive } from '../support/pids.js';
import { runCli } from '../support/run-child.js';
import { startCluster } from '../cluster/cluster.js';
import { startPostgres } from '../fence/postgres-server.js';

// Named limits.
/** The demo's own budget; it normally takes well under 30 s. */
const demoBudgetMs = 120_000;

interface ScenarioJson {
  staleWritesAccepted: number;
  staleWritesRejected: number;
  zombieWrites: number;
  tokens: number[];
  finalRecord: Array<{ part: number; writer: string; token: number }>;
  finalRecordMixed: boolean;
  observedOnResume: { signalAborted: boolean; sessionValid: boolean } | null;
  writes: Array<{
    writer: string;
    token: number;
    part: number;
    accepted: boolean;
    zombie: boolean;
    rejection?: { presented: number; current: number };
  }>;
}

function parseReport(stdout: string): { fenced: ScenarioJson; unfenced: ScenarioJson } {
  const lines = stdout.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `stdout must be exactly one JSON object:\n${stdout}`);
  const report = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.deepEqual(Object.keys(report).sort(), ['fenced', 'unfenced']);
  return report as unknown as { fenced: ScenarioJson; unfenced: ScenarioJson };
}

function checkVerdicts(r: { fenced: ScenarioJson; unfenced: ScenarioJson }, parts: number): void {
  for (const s of [r.fenced, r.unfenced]) {
    assert.equal(s.tokens.length, 2);
    const [t1, t2] = s.tokens as [number, number];
    assert.ok(t2 > t1, `worker-2's token ${t2} must exceed worker-1's ${t1}`);
    assert.equal(s.zombieWrites, parts - 1);
    // On resume the SDK already knew; the zombie wrote anyway.
    assert.deepEqual(s.observedOnResume, { signalAborted: true, sessionValid: false });
  }
  const [t1, t2] = r.fenced.tokens as [number, number];
  assert.equal(r.fenced.staleWritesAccepted, 0);
  assert.equal(r.fenced.staleWritesRejected, parts - 1);
  for (const w of r.fenced.writes.filter((x) => x.zombie)) {
    assert.equal(w.accepted, false);
    assert.deepEqual(w.rejection, { presented: t1, current: t2 });
  }
  assert.equal(r.fenced.finalRecordMixed, false);
  assert.deepEqual(
    r.fenced.finalRecord.map((p) => `${p.part}:${p.writer}@${p.token}`),
    Array.from({ length: parts }, (_, i) => `${i + 1}:worker-2@${t2}`),
  );

  const [u1, u2] = r.unfenced.tokens as [number, number];
  assert.equal(r.unfenced.staleWritesAccepted, parts - 1);
  assert.equal(r.unfenced.staleWritesRejected, 0);
  assert.equal(r.unfenced.finalRecordMixed, true);
  assert.deepEqual(
    r.unfenced.finalRecord.map((p) => `${p.part}:${p.writer}@${p.token}`),
    Array.from({ length: parts }, (_, i) =>
      i === 0 ? `1:worker-2@${u2}` : `${i + 1}:worker-1@${u1}`,
    ),
  );
}

test('tenure demo split-brain --json: the fence refuses the zombie, no fence corrupts', async () => {
  const r = await runCli(['demo', 'split-brain', '--json'], demoBudgetMs);
  assert.equal(r.code, 0, r.stderr);
  checkVerdicts(parseReport(r.stdout), 3);
  // The timeline went to stderr, as it happened.
  for (const expected of [/SIGSTOP worker-1/, /SIGCONT worker-1/, /REJECTED, StaleTokenError/]) {
    assert.match(r.stderr, expected);
  }
  assert.match(r.stderr, /ACCEPTED \(a stale write\)/);
  assert.match(r.stderr, /cluster +stopped/);
  // The cluster members and both workers of both runs: 3 + 4 processes, all gone.
  const pids = pidsIn(r.stderr);
  assert.ok(pids.length >= 7, `expected the timeline to name ≥ 7 PIDs, got ${pids.join(', ')}`);
  assert.deepEqual(
    pids.filter((p) => alive(p)),
    [],
    'processes the demo started are still running',
  );
});

test('tenure demo split-brain against a running cluster, PostgreSQL store, 4 parts', async () => {
  await using cluster = await startCluster({ kind: 'tenure', size: 3 });
  await using pg = await startPostgres({ database: 'demo' });
  const r = await runCli(
    [
      'demo',
      'split-brain',
      '--json',
      '--endpoints',
      cluster.endpoints.join(','),
      '--store',
      'postgres',
      '--pg-url',
      pg.url,
      '--parts',
      '4',
    ],
    demoBudgetMs,
  );
  assert.equal(r.code, 0, r.stderr);
  checkVerdicts(parseReport(r.stdout), 4);
  assert.match(r.stderr, /fencedTransaction/);
});

test('tenure demo split-brain: bad usage exits 2 with a message', async () => {
  const r = await runCli(['demo', 'split-brain', '--store', 'postgres'], 30_000);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--pg-url/);
  const bad = await runCli(['demo', 'split-brain', '--store', 'redis'], 30_000);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /expected files or postgres/);
});
