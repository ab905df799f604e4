import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LADDER, LevelLadder } from './level.js';

describe('LevelLadder', () => {
  it('engages each action at its level and releases below its release level (hysteresis)', () => {
    const l = new LevelLadder(DEFAULT_LADDER);
    const steps: [number, string[]][] = [
      [0.5, []],
      [3, ['+stopRouting']],
      [2, []],
      [8.5, ['+failover']],
      [Infinity, ['+remove']],
      [0.5, ['-stopRouting', '-failover', '-remove']],
    ];
    for (const [level, want] of steps) {
      const got = l.update(level, 0).map((c) => `${c.engaged ? '+' : '-'}${c.action}`);
      assert.deepEqual(got, want, `level ${level}`);
    }
  });
  it("an operator's word holds until the operator releases it", () => {
    const l = new LevelLadder(DEFAULT_LADDER);
    assert.deepEqual(
      l.engageByOperator('remove', 0).map((c) => c.action),
      ['remove'],
    );
    assert.deepEqual(l.update(0, 1), []);
    assert.ok(l.engaged().has('remove'));
    assert.equal(l.releaseByOperator('remove', 2).length, 1);
    assert.ok(!l.engaged().has('remove'));
  });
  it('operator-only actions never engage on the level alone', () => {
    const l = new LevelLadder([
      { action: 'remove', engageAt: 1, releaseBelow: 0, operatorOnly: true },
    ]);
    assert.deepEqual(l.update(100, 0), []);
  });
  it('rejects duplicate actions and release above engage', () => {
    assert.throws(
      () =>
        new LevelLadder([
          { action: 'a', engageAt: 1, releaseBelow: 0 },
          { action: 'a', engageAt: 2, releaseBelow: 0 },
        ]),
    );
    assert.throws(() => new LevelLadder([{ action: 'a', engageAt: 1, releaseBelow: 2 }]));
  });
});
