// Table tests for the suspicion timer formulas (Lifeguard §IV.B; memberlist's defaults from its
// config.go, put through the formulas of its util.go and state.go).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  expectedConfirmations,
  lifeguardTimeoutMs,
  Suspicion,
  suspicionMinMs,
} from './suspicion.js';

describe('suspicionMinMs = mult · max(1, log10 n) · interval', () => {
  const table: [number, number][] = [
    [3, 4000],
    [10, 4000],
    [16, 4816],
    [128, 8429],
    [10_000, 16_000],
  ];
  for (const [n, want] of table) {
    it(`n = ${n} → ${want} ms (LAN: mult 4, 1 s)`, () => {
      assert.ok(Math.abs(suspicionMinMs(4, n, 1000) - want) < 1, `${suspicionMinMs(4, n, 1000)}`);
    });
  }
  it('max = 6 × min: 24 s at n ≤ 10, 28.9 s at 16, 50.6 s at 128', () => {
    assert.ok(Math.abs(6 * suspicionMinMs(4, 16, 1000) - 28_897) < 2);
    assert.ok(Math.abs(6 * suspicionMinMs(4, 128, 1000) - 50_574) < 2);
  });
});

describe('expectedConfirmations K = SuspicionMult − 2, 0 when n − 2 < K', () => {
  const table: [number, number, number][] = [
    [4, 16, 2],
    [4, 4, 2],
    [4, 3, 0],
    [6, 100, 4],
    [3, 10, 1],
  ];
  for (const [mult, n, want] of table)
    it(`mult ${mult}, n ${n} → ${want}`, () => assert.equal(expectedConfirmations(mult, n), want));
});

describe('lifeguardTimeoutMs(C, K, min, max)', () => {
  const min = 4000;
  const max = 24_000;
  const table: [number, number, number][] = [
    [0, 2, 24_000],
    [1, 2, Math.floor(24_000 - 20_000 * (Math.log(2) / Math.log(3)))],
    [2, 2, 4000],
    [5, 2, 4000],
    [0, 0, 4000],
    [3, 4, Math.floor(24_000 - 20_000 * (Math.log(4) / Math.log(5)))],
  ];
  for (const [c, k, want] of table)
    it(`C ${c}, K ${k} → ${want}`, () => assert.equal(lifeguardTimeoutMs(c, k, min, max), want));
});

describe('Suspicion', () => {
  it('counts each independent accuser once, never the first, and shortens its deadline', () => {
    const s = new Suspicion(1000, 4000, 24_000, 2, 'a', 900);
    assert.equal(s.deadlineMs(), 25_000);
    assert.ok(!s.confirm('a'));
    assert.ok(s.confirm('b'));
    assert.ok(!s.confirm('b'));
    assert.ok(s.confirm('c'));
    assert.equal(s.confirmations, 2);
    assert.equal(s.deadlineMs(), 5000);
    s.postpone(30_000);
    assert.equal(s.deadlineMs(), 35_000);
    assert.deepEqual(s.accusers(), ['a', 'b', 'c']);
  });
});
