// Shrunk failures are replayed forever: a script recorded with a planted mutant must still fail
// with the same invariant, one recorded without must now pass.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RegressionScript } from '../../src/sim/regression.js';
import { runSchedule } from '../../src/sim/run.js';
import { repoRoot } from '../support/paths.js';

const dir = join(repoRoot(), 'test', 'regressions');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

test('there are regression scripts to replay', () => {
  assert.ok(files.length > 0, `no regression scripts in ${dir}`);
});

for (const f of files) {
  test(`regression ${f}`, async () => {
    const script = JSON.parse(readFileSync(join(dir, f), 'utf8')) as RegressionScript;
    const r = await runSchedule(script.schedule, { mutants: new Set(script.mutants) });
    if (script.mutants.length > 0) {
      // A script recorded with a planted bug pins one interleaving of this code; when the core's
      // timing changes on purpose, record a fresh one (bin/tenure sim --seed S --mutants M --record).
      assert.equal(
        r.ok,
        false,
        `${f}: planted ${script.mutants.join(',')} is no longer caught by this schedule; re-record it`,
      );
      assert.equal(r.invariant, script.invariant);
      const clean = await runSchedule(script.schedule);
      assert.equal(
        clean.ok,
        true,
        `${f}: without the mutant the schedule must pass: ${clean.message}`,
      );
    } else {
      assert.equal(r.ok, true, `${f}: the recorded bug is back: ${r.message}`);
    }
  });
}
