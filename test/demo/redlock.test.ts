// `tenure demo redlock --json` end to end, as a user runs it: each Redlock scenario must show its
// failure with real Redis (a paused holder's stale write landed; two majority holders at once
// after a node's wall clock jumped; the same after a node restarted without fsync) — if Redlock
// does not fail, this test fails — and tenure, under the same faults, must show no overlap and
// refuse the paused holder's write. Every process the demo names in its timeline must be gone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pidsIn, alive } from '../support/pids.js';
import { runCli } from '../support/run-child.js';

// Named limits.
/** A hang guard: the demo takes about 25 s on 2 idle cores. */
const demoBudgetMs = 180_000;

interface RedlockCounts {
  staleWritesLanded: number;
  overlaps: number;
  setups: number;
}
interface TenureCounts {
  staleWritesRejected: number;
  staleWritesLanded: number;
  overlaps: number;
}
interface Report {
  redlock: Record<'pausedHolder' | 'clockJump' | 'restart', RedlockCounts>;
  tenure: Record<'pausedHolder' | 'clockJump' | 'restart', TenureCounts>;
}

test('tenure demo redlock --json: Redlock fails three ways, tenure does not', async () => {
  const r = await runCli(['demo', 'redlock', '--json'], demoBudgetMs);
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  assert.equal(
    lines.length,
    1,
    `stdout must be exactly one JSON object:\n${r.stdout}\n${r.stderr}`,
  );
  const report = JSON.parse(lines[0] ?? '') as Report;

  const red = report.redlock;
  assert.ok(red.pausedHolder.staleWritesLanded >= 1, `paused holder: ${r.stderr}`);
  assert.ok(red.pausedHolder.overlaps >= 1, 'the late write landed inside B’s tenure');
  assert.equal(red.clockJump.overlaps, 1, `clock jump: two majority holders at once\n${r.stderr}`);
  assert.equal(red.clockJump.staleWritesLanded, 1);
  assert.equal(red.restart.overlaps, 1, `restart: the lock forgotten\n${r.stderr}`);
  assert.equal(red.restart.staleWritesLanded, 1);

  const ten = report.tenure;
  assert.equal(ten.pausedHolder.staleWritesRejected, 1, 'the fence refuses the paused holder');
  for (const [name, s] of Object.entries(ten)) {
    assert.equal(s.overlaps, 0, `tenure ${name}: two holders at once\n${r.stderr}`);
    assert.equal(s.staleWritesLanded, 0, `tenure ${name}: a stale write landed`);
  }
  assert.equal(r.code, 0, r.stderr);

  // The timeline (stderr) shows the faults as they happened.
  for (const expected of [
    /SIGSTOP A/,
    /EXPIRED \(Redis expiry follows the wall clock\)/,
    /FORGOTTEN/,
    /TWO HOLDERS AT ONCE/,
    /REJECTED, StaleTokenError/,
    /wall clock jumps \+3600 s \(probe/,
    /kill -9 n\d and n\d/,
  ]) {
    assert.match(r.stderr, expected);
  }
  // Five Redis servers (one restarted), client A, the cluster's members (two restarted) and the
  // two tenure workers: all named, all gone.
  const pids = pidsIn(r.stderr);
  assert.ok(pids.length >= 14, `expected the timeline to name ≥ 14 PIDs, got ${pids.join(', ')}`);
  assert.deepEqual(
    pids.filter((p) => alive(p)),
    [],
    'processes the demo started are still running',
  );
});
