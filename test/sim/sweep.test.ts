// The CI sweep: `bin/tenure sim --seeds 2000` must report no failure. Each seed checks every
// invariant continuously and the client history for linearizability at the end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../helpers.js';

test('bin/tenure sim --seeds 2000 --json reports 0 failures', { timeout: 900_000 }, async () => {
  const r = await runCli(['sim', '--seeds', '2000', '--json', '--no-shrink'], 880_000);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  const out = JSON.parse(last) as {
    seeds: number;
    failed: number;
    opsChecked: number;
    seedsPerSecond: number;
    failures: unknown[];
  };
  console.log(
    `sim sweep: ${out.seeds} seeds, ${out.failed} failed, ${out.opsChecked} ops checked, ${out.seedsPerSecond} seeds/s`,
  );
  assert.equal(out.seeds, 2000);
  assert.deepEqual(out.failures, [], 'seeds failed; each failure prints its replay command');
  assert.equal(out.failed, 0);
  assert.equal(r.code, 0);
  assert.ok(out.opsChecked > 100_000, 'the workload produced a meaningful history');
});
