// `tenure chaos`, bounded: one cycle of every fault class (partitions of every shape, pauses,
// kills of one, of the leader and of all, clock rate and jumps, a torn WAL tail, a failing fsync,
// a member removed and added again) on 3 members in a private namespace, under every
// workload, judged by the checkers of src/check. It must find nothing, and must have run each
// class. The run needs root (namespaces, iptables), as test/faults does; npm test installs
// iptables. The budget is a hang guard, not a speed check (one cycle took 1.6-1.8 min here).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAULTS, WORKLOADS } from '../../src/chaos/options.js';
import { runChild } from '../support/run-child.js';
import { tenureBin } from '../support/paths.js';

const budgetMs = 10 * 60_000;

interface Summary {
  readonly ops: number;
  readonly anomalies: number;
  readonly faults: Readonly<Record<string, number>>;
  readonly workloads: readonly {
    readonly name: string;
    readonly ops: number;
    readonly verdict: string;
  }[];
}

test('a bounded chaos pass finds no anomaly and runs every fault class and workload', async () => {
  assert.equal(process.getuid?.(), 0, 'tenure chaos needs root (run npm test as root, as CI does)');
  const r = await runChild(
    process.execPath,
    [tenureBin(), 'chaos', '--minutes', '0', '--seed', '7', '--json'],
    budgetMs,
    { killSignal: 'SIGTERM' },
  );
  const last = r.stdout.trim().split('\n').pop() ?? '';
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr.slice(-20_000)}`);
  const s = JSON.parse(last) as Summary;
  console.log(`# chaos: ${last}`);
  assert.equal(s.anomalies, 0);
  assert.deepEqual(Object.keys(s.faults).sort(), [...FAULTS].sort());
  assert.deepEqual(s.workloads.map((w) => w.name).sort(), [...WORKLOADS].sort());
  for (const w of s.workloads) {
    assert.ok(w.ops > 0, `${w.name} recorded no operation`);
    // 'undecided' (the checker's budget ran out) proves nothing either way.
    assert.equal(w.verdict, 'ok', `${w.name}: ${JSON.stringify(w)}`);
  }
});

test('tenure chaos refuses an unknown fault with exit code 2', async () => {
  const r = await runChild(process.execPath, [tenureBin(), 'chaos', '--faults', 'nope'], 30_000);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /unknown 'nope'/);
});
