// Planted bugs reach a real member only through TENURE_TEST_PLANTED_BUGS, by a mutant's name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../src/server/config.js';
import { PLANTED_BUGS_ENV, plantedBugsFrom } from '../../src/server/planted-bugs.js';
import { runChild } from '../support/run-child.js';
import { tenureBin } from '../support/paths.js';

test('no planted bug unless the variable names one', () => {
  assert.equal(plantedBugsFrom({}).size, 0);
  assert.equal(plantedBugsFrom({ [PLANTED_BUGS_ENV]: ' ' }).size, 0);
  const set = plantedBugsFrom({ [PLANTED_BUGS_ENV]: 'readBeforeApplied, keepaliveUnconfirmed' });
  assert.deepEqual([...set].sort(), ['keepaliveUnconfirmed', 'readBeforeApplied']);
});

test('a name that is no planted bug is refused, and tenure start exits 2', async () => {
  assert.throws(() => plantedBugsFrom({ [PLANTED_BUGS_ENV]: 'fastPath' }), ConfigError);
  const r = await runChild(process.execPath, [tenureBin(), 'start'], 30_000, {
    env: { ...process.env, [PLANTED_BUGS_ENV]: 'fastPath' },
  });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /'fastPath' is not a planted bug/);
});
