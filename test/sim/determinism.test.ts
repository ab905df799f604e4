// The simulator is deterministic: the same seed gives the same event hash, run after run
// (TigerBeetle-style hash log). The production member's promises run between events in an order
// fixed by the code, so even asynchronous code replays exactly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSchedule, runSchedule } from '../../src/sim/index.js';

test('12 seeds run twice give identical event hashes and results', async () => {
  for (let seed = 1; seed <= 12; seed++) {
    const a = await runSchedule(generateSchedule(seed));
    const b = await runSchedule(generateSchedule(seed));
    assert.equal(a.eventHash, b.eventHash, `seed ${seed}: event hash differs between runs`);
    assert.equal(a.events, b.events, `seed ${seed}: event count differs`);
    assert.equal(a.opsChecked, b.opsChecked, `seed ${seed}: history length differs`);
    assert.equal(a.ok, b.ok, `seed ${seed}: verdict differs`);
  }
});

test('different seeds give different runs (the hash can tell runs apart)', async () => {
  const hashes = new Set<number>();
  for (let seed = 1; seed <= 12; seed++)
    hashes.add((await runSchedule(generateSchedule(seed))).eventHash);
  assert.equal(hashes.size, 12);
});
