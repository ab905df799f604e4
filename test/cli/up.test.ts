// `npm start` must work on a fresh clone: until the server exists it runs a short simulated
// cluster and says what it did.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../helpers.js';

test('bin/tenure up runs the simulated cluster and exits 0', async () => {
  const r = await runCli(['up'], 120_000);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /all invariants held/);
  assert.match(r.stdout, /linearizable/);
});

test('bin/tenure sim rejects bad input with a clear message', async () => {
  const r = await runCli(['sim', '--seeds', 'many'], 60_000);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--seeds must be a non-negative integer/);
  const m = await runCli(['sim', '--mutants', 'nosuchbug', '--seeds', '1'], 60_000);
  assert.equal(m.code, 2);
  assert.match(m.stderr, /unknown mutant 'nosuchbug'/);
});
