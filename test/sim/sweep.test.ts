// The CI sweep: `bin/tenure sim --seeds 600` must report no failure. Each seed runs the production
// member through its client API, checks every invariant continuously, and at the end judges the
// register history for linearizability, the lease renewals against the lease contract and the
// lock and election holds for exclusion, and every applied entry's answer against the naive key
// space. (The full `--seeds 2000` sweep is run by hand; a seed
// costs several times what it did when the simulator ran bare replicas.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../support/run-child.js';

const SEEDS = 600;

test(
  `bin/tenure sim --seeds ${SEEDS} --json reports 0 failures`,
  { timeout: 900_000 },
  async () => {
    const r = await runCli(['sim', '--seeds', String(SEEDS), '--json', '--no-shrink'], 880_000);
    const last = r.stdout.trim().split('\n').pop() ?? '';
    const out = JSON.parse(last) as {
      seeds: number;
      failed: number;
      opsChecked: number;
      renewalsChecked: number;
      holdsChecked: number;
      answersChecked: number;
      seedsPerSecond: number;
      failures: unknown[];
    };
    console.log(
      `sim sweep: ${out.seeds} seeds, ${out.failed} failed, ${out.opsChecked} ops checked, ` +
        `${out.renewalsChecked} renewals, ${out.holdsChecked} holds and ${out.answersChecked} ` +
        `answers judged, ${out.seedsPerSecond} seeds/s`,
    );
    assert.equal(out.seeds, SEEDS);
    assert.deepEqual(out.failures, [], 'seeds failed; each failure prints its replay command');
    assert.equal(out.failed, 0);
    assert.equal(r.code, 0);
    assert.ok(out.opsChecked > 100_000, 'the workload produced a meaningful history');
    assert.ok(out.renewalsChecked > 5_000, 'the lease holders produced renewals to judge');
    assert.ok(out.holdsChecked > 1_000, 'the lock and election clients produced holds to judge');
    assert.ok(out.answersChecked > 100_000, 'applied entries were judged against the reference');
  },
);
