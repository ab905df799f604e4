// The simulator must find bugs: every planted mutant is caught within 1,000 seeds, and the CLI
// says by which invariant.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MUTANT_NAMES } from '../../src/core/base/mutants.js';
import { runCli } from '../support/run-child.js';

interface Catch {
  name: string;
  caught: boolean;
  seedsToCatch: number | null;
  invariant: string | null;
}

test(
  'bin/tenure sim --mutants all --seeds 1000 catches every mutant',
  { timeout: 900_000 },
  async () => {
    const r = await runCli(['sim', '--mutants', 'all', '--seeds', '1000', '--json'], 880_000);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as { mutants: Catch[] };
    for (const m of out.mutants)
      console.log(
        `${m.name}: ${m.caught ? `caught after ${m.seedsToCatch} seeds by ${m.invariant}` : 'NOT CAUGHT'}`,
      );
    assert.deepEqual(out.mutants.map((m) => m.name).sort(), [...MUTANT_NAMES].sort());
    const missed = out.mutants.filter((m) => !m.caught).map((m) => m.name);
    assert.deepEqual(missed, [], 'mutants not caught within 1,000 seeds');
    for (const m of out.mutants) {
      assert.ok(m.seedsToCatch !== null && m.seedsToCatch <= 1000);
      assert.ok(m.invariant !== null && m.invariant.length > 0);
    }
    assert.equal(r.code, 0);
  },
);
