// The Auth script against two fresh 3-member etcd 3.4.23 clusters: the recordings must be
// identical (the normalisation removes what legitimately varies) and equal to the golden file
// test/compat/etcd-auth-recording.json (rewritten with REWRITE=1) that tenure is held to.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareRecordings } from './differential.js';
import { authGoldenPath, readGolden, recordAuthAgainst, writeGolden } from './recording.js';

test('two fresh etcd clusters answer the Auth script alike, as the golden file says', async () => {
  const first = await recordAuthAgainst('etcd');
  const second = await recordAuthAgainst('etcd');
  assert.deepEqual(compareRecordings(first, second), [], 'etcd against etcd');
  if (process.env['REWRITE'] === '1') await writeGolden(first, authGoldenPath);
  const diffs = compareRecordings(readGolden(authGoldenPath), first);
  assert.deepEqual(diffs, [], 'etcd against the golden file (REWRITE=1 regenerates it)');
});
