import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IntervalWindow } from './interval-window.js';

describe('IntervalWindow', () => {
  const table: {
    samples: number[];
    cap: number;
    mean: number;
    variance: number;
    kept: number[];
  }[] = [
    { samples: [], cap: 3, mean: 0, variance: 0, kept: [] },
    { samples: [1000], cap: 3, mean: 1000, variance: 0, kept: [1000] },
    { samples: [750, 1250], cap: 3, mean: 1000, variance: 62_500, kept: [750, 1250] },
    { samples: [1, 2, 3, 4], cap: 3, mean: 3, variance: 2 / 3, kept: [2, 3, 4] },
    { samples: [10, 10, 10, 40], cap: 2, mean: 25, variance: 225, kept: [10, 40] },
  ];
  for (const t of table) {
    it(`${JSON.stringify(t.samples)} in ${t.cap} → mean ${t.mean}, variance ${t.variance}`, () => {
      const w = new IntervalWindow(t.cap);
      for (const s of t.samples) w.add(s);
      assert.deepEqual(w.values(), t.kept);
      assert.ok(Math.abs(w.meanMs - t.mean) < 1e-9);
      assert.ok(Math.abs(w.varianceMs2 - t.variance) < 1e-6);
      assert.ok(Math.abs(w.stdDevMs - Math.sqrt(t.variance)) < 1e-6);
    });
  }
  it('stays exact over many evictions (running sums are recomputed)', () => {
    const w = new IntervalWindow(10);
    for (let i = 0; i < 100_000; i++) w.add(1e6 + (i % 10));
    assert.ok(Math.abs(w.meanMs - (1e6 + 4.5)) < 1e-6);
    assert.ok(Math.abs(w.varianceMs2 - 8.25) < 1e-3);
  });
  it('rejects bad capacities and intervals', () => {
    assert.throws(() => new IntervalWindow(0));
    assert.throws(() => new IntervalWindow(3).add(-1));
  });
});
