// `tenure demo fence-previous --json` end to end: the frozen leader was killed (SIGKILL by its
// successor's fencePrevious) before the new leader started, the resource's log has no write by
// the old PID after the new term's first write, the failing hook kept the new leader from
// starting, and every process the demo named is gone afterwards.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FencePreviousReport } from '../../src/demo/fence-previous.js';
import { alive } from '../support/pids.js';
import { runCli } from '../support/run-child.js';

// Named limits.
/** The demo's own budget (a hang guard); it normally takes well under 30 s. */
const demoBudgetMs = 120_000;

test('demo fence-previous: the new leader starts only after the frozen one is gone', async () => {
  const r = await runCli(['demo', 'fence-previous', '--json'], demoBudgetMs);
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}`);
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `stdout must be exactly one JSON object:\n${r.stdout}`);
  const report = JSON.parse(lines[0] ?? '') as FencePreviousReport & { ok: boolean };
  assert.equal(report.ok, true);

  const f = report.fenced;
  assert.equal(f.killed.pid, f.oldLeader.pid, 'the frozen leader is the one killed');
  assert.equal(f.killed.signal, 'SIGKILL');
  assert.ok(f.oldLeader.frozenAtMs <= f.killed.killedAtMs);
  assert.ok(
    f.newLeader.startedAtMs >= f.killed.goneAtMs,
    `started at ${f.newLeader.startedAtMs} ms, before the old pid was gone (${f.killed.goneAtMs})`,
  );
  assert.equal(f.newLeader.previousToken, f.oldLeader.token);
  assert.ok(BigInt(f.newLeader.token) > BigInt(f.oldLeader.token));
  // From the resource's own log, not from the demo's summary.
  const firstNew = f.log.findIndex((w) => w.pid === f.newLeader.pid);
  assert.ok(firstNew > 0, 'the old leader wrote first, then the new one');
  const late = f.log.slice(firstNew).filter((w) => w.pid === f.oldLeader.pid);
  assert.deepEqual(late, [], 'no write by the old pid after the new term began');
  assert.equal(f.oldWritesAfterNewTerm, 0);

  const g = report.failing;
  assert.equal(g.newLeaderStarted, false, 'a failed fence never starts the term');
  assert.ok(g.fenceFailures >= 2, `${g.fenceFailures} failed fences`);
  assert.ok(g.errors.every((e) => e.includes('fencing device unreachable')));
  assert.equal(g.stoppedPid, g.oldLeader.pid);

  for (const m of r.stderr.matchAll(/\bpids? ((?:\d+)(?:, \d+)*)/g)) {
    for (const p of (m[1] ?? '').split(', ')) {
      assert.equal(alive(Number(p)), false, `pid ${p} still running after the demo`);
    }
  }
});
