// Table tests for the bench's statistics.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { median, medianOf, percentile, ratio } from '../../src/bench/stats.js';

test('percentile: nearest rank', () => {
  const cases: Array<[number[], number, number | undefined]> = [
    [[], 50, undefined],
    [[7], 50, 7],
    [[7], 99, 7],
    [[1, 2, 3, 4], 50, 2],
    [[4, 3, 2, 1], 75, 3],
    [[1, 2, 3, 4], 100, 4],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
    [Array.from({ length: 1000 }, (_, i) => i + 1), 99, 990],
    [[5, 1], 1, 1],
  ];
  for (const [xs, p, want] of cases) assert.equal(percentile(xs, p), want, `p${p} of ${xs.length}`);
});

test('median, medianOf and ratio', () => {
  assert.equal(median([]), undefined);
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(medianOf([null, 5, undefined, 1, 3]), 3);
  assert.equal(medianOf([null]), null);
  assert.equal(ratio(3, 2), 1.5);
  assert.equal(ratio(null, 2), null);
  assert.equal(ratio(3, 0), null);
});
