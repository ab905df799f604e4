// The checker's commands keep working end to end (no timed assertions: the bench reports times,
// the test only checks that it runs and answers the right verdict).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli } from '../support/run-child.js';

test('tenure check bench runs on a small history and reports its verdict', async () => {
  const r = await runCli(['check', 'bench', '--ops', '500', '--json'], 120_000);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    ops: number;
    keys: number;
    verdict: string;
    checkMs: number;
  };
  assert.equal(out.ops, 500);
  assert.equal(out.keys, 16);
  assert.equal(out.verdict, 'ok');
  assert.equal(typeof out.checkMs, 'number');
});

test('tenure check porcupine agrees with every published verdict', async () => {
  const r = await runCli(['check', 'porcupine', '--json'], 120_000);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
});
