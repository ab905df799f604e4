// The shrinker turns a failing schedule into a smaller one that fails the same way.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSchedule } from '../../src/sim/run.js';
import { generateSchedule } from '../../src/sim/schedule.js';
import { shrink } from '../../src/sim/shrink.js';

test('shrinking a caught mutant keeps the invariant and drops faults', async () => {
  const mutants = new Set(['figure8'] as const);
  let seed = 0;
  let failed;
  for (let s = 1; s <= 400 && !failed; s++) {
    const r = await runSchedule(generateSchedule(s), { mutants });
    if (!r.ok) {
      seed = s;
      failed = r;
    }
  }
  assert.ok(failed, 'figure8 mutant was not caught in 400 seeds');
  const original = generateSchedule(seed);
  const shrunk = await shrink(original, failed, mutants);
  assert.equal(shrunk.result.ok, false);
  assert.equal(shrunk.result.invariant, failed.invariant);
  assert.ok(
    shrunk.schedule.faults.length < original.faults.length,
    `no fault was dropped (${original.faults.length})`,
  );
  // The shrunk schedule replays to the same failure.
  const again = await runSchedule(shrunk.schedule, { mutants });
  assert.equal(again.invariant, failed.invariant);
  assert.equal(again.eventHash, shrunk.result.eventHash);
});
