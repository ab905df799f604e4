// The differential script against two fresh 3-member etcd clusters: the two recordings must be
// identical (so the normalisation removes everything that legitimately varies), and equal to the
// golden file test/compat/etcd-recording.json (rewritten with REWRITE=1) that tenure is held to.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareRecordings } from './differential.js';
import { readGolden, recordAgainst, writeGolden } from './recording.js';

test('two fresh etcd clusters give the same normalised recording, equal to the golden file', async () => {
  const first = await recordAgainst('etcd');
  const second = await recordAgainst('etcd');
  assert.deepEqual(compareRecordings(first, second), [], 'etcd against etcd');
  if (process.env['REWRITE'] === '1') await writeGolden(first);
  const golden = readGolden();
  const diffs = compareRecordings(golden, first);
  assert.deepEqual(diffs, [], 'etcd against the golden file (REWRITE=1 regenerates it)');
});
