// Table tests for the harness's own formulas (quantiles, pause tolerance), the metrics on a
// hand-written history, and the simulator's determinism.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pauseTolerance, quantile, runCell } from './harness.js';
import { Recorder } from './metrics.js';

describe('quantile (nearest rank)', () => {
  const table: [number[], number, number | null][] = [
    [[], 0.5, null],
    [[7], 0.99, 7],
    [[3, 1, 2], 0.5, 2],
    [[1, 2, 3, 4], 0.5, 2],
    [Array.from({ length: 100 }, (_, i) => i + 1), 0.99, 99],
    [Array.from({ length: 100 }, (_, i) => i + 1), 1, 100],
  ];
  for (const [xs, q, want] of table)
    it(`${q} of ${xs.length} samples → ${want}`, () => assert.equal(quantile(xs, q), want));
});

describe('pauseTolerance: longest stop with no dead there or below', () => {
  const c = (dead: number) => ({ dead, total: 2 });
  const table: [[number, number][], number][] = [
    [
      [
        [500, 0],
        [1000, 0],
        [2000, 0],
        [3000, 0],
        [5000, 1],
      ],
      3000,
    ],
    [
      [
        [500, 0],
        [1000, 1],
        [2000, 0],
      ],
      500,
    ],
    [[[500, 1]], 0],
    [
      [
        [500, 0],
        [30_000, 0],
      ],
      30_000,
    ],
  ];
  for (const [rows, want] of table) {
    it(`${JSON.stringify(rows)} → ${want}`, () => {
      assert.equal(pauseTolerance(new Map(rows.map(([len, d]) => [len, c(d)]))), want);
    });
  }
});

describe('Recorder', () => {
  it('measures detection at the first observer and at all, and counts false dead and flaps', () => {
    // Observers that never heard of a member are not asked to agree, so everyone starts alive.
    const r = new Recorder(4);
    for (let i = 0; i < 4; i++) r.setUp(i, true, 0);
    for (let o = 0; o < 4; o++)
      for (let x = 0; x < 4; x++) if (o !== x) r.verdict(0, o, x, 'alive');
    r.startRecording(0);
    // A wrong accusation of 2 by 1, taken back: one mistake, one flap, one false dead.
    r.verdict(1000, 1, 2, 'suspect');
    r.verdict(1500, 1, 2, 'dead');
    r.verdict(2000, 1, 2, 'alive');
    // 3 crashes at 10 s; 0 sees it at 13 s, 1 at 14 s, 2 at 15 s.
    r.crash(3, 10_000, true);
    r.verdict(13_000, 0, 3, 'dead');
    r.verdict(14_000, 1, 3, 'dead');
    r.verdict(15_000, 2, 3, 'dead');
    const m = r.finish(3_600_000);
    assert.deepEqual(m.detectionFirstMs, [3000]);
    assert.deepEqual(m.detectionAllMs, [5000]);
    assert.equal(m.falseDead, 1);
    assert.equal(m.mistakes, 1);
    assert.equal(m.mistakeMs, 1000);
    assert.equal(m.flaps, 1);
  });
  it('excuses dead verdicts about a member stopped longer than 3 s, not shorter', () => {
    const r = new Recorder(3);
    for (let i = 0; i < 3; i++) r.setUp(i, true, 0);
    for (let o = 0; o < 3; o++)
      for (let x = 0; x < 3; x++) if (o !== x) r.verdict(0, o, x, 'alive');
    r.startRecording(0);
    r.stopStart(2, 'pause', 1000);
    r.verdict(2500, 0, 2, 'dead');
    r.stopEnd(2, 3000);
    r.stopStart(1, 'pause', 10_000);
    r.verdict(14_500, 0, 1, 'dead');
    r.stopEnd(1, 15_000);
    const m = r.finish(20_000);
    assert.equal(m.falseDead, 1, 'the 2 s pause');
    assert.deepEqual(
      m.stops.map((s) => [s.lengthMs, s.dead]),
      [
        [2000, true],
        [5000, true],
      ],
    );
  });
});

describe('Simulation', () => {
  it('is a deterministic function of its seed', () => {
    const cell = { scenario: 'silent-crash', detector: 'tenure', n: 5, seed: 99, scale: 0.07 };
    assert.deepEqual(runCell(cell), runCell(cell));
  });
});
