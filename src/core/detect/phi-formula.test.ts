// Table tests for the φ formulas. Expected values are computed independently (a high-precision
// erfc series/continued fraction, and each formula solved by hand for its φ = 8 crossing).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  phiExponential,
  phiLogistic,
  phiLogisticTail,
  phiNormal,
  phiNormalTail,
  silenceAtPhi,
} from './phi-formula.js';

function close(actual: number, expected: number, tol: number, what: string): void {
  assert.ok(
    Math.abs(actual - expected) <= tol,
    `${what}: got ${actual}, want ${expected} ± ${tol}`,
  );
}

describe('phiNormalTail: −log10 Q(y) of the standard normal', () => {
  const table: [number, number][] = [
    [-1, 0.075026],
    [0, 0.30103],
    [1, 0.799546],
    [2, 1.643016],
    [3, 2.869699],
    [5, 6.542646],
    [5.61, 7.994977],
    [10, 23.118053],
    [20, 88.560095],
  ];
  for (const [y, want] of table) {
    it(`y = ${y} → ${want}`, () =>
      close(phiNormalTail(y), want, 1e-5 * Math.max(1, want), `y=${y}`));
  }
  it('is finite and increasing far in the tail (no cancellation, no Infinity)', () => {
    let last = -Infinity;
    for (let y = 0; y <= 60; y += 0.5) {
      const v = phiNormalTail(y);
      assert.ok(Number.isFinite(v) && v > last, `y=${y}: ${v}`);
      last = v;
    }
  });
});

describe("phiLogisticTail: Akka's approximation", () => {
  it('crosses φ = 8 at y ≈ 5.23, not 5.61 as the exact normal does', () => {
    const y = silenceAtPhi(8, (s) => phiLogisticTail(s / 1000), 100_000) / 1000;
    close(y, 5.23, 0.01, 'logistic crossing');
    const exact = silenceAtPhi(8, (s) => phiNormalTail(s / 1000), 100_000) / 1000;
    close(exact, 5.61, 0.01, 'normal crossing');
  });
  it('matches the logistic formula at sample points', () => {
    for (const y of [-2, 0, 1, 3]) {
      const a = y * (1.5976 + 0.070566 * y * y);
      const want = -Math.log10(Math.exp(-a) / (1 + Math.exp(-a)));
      close(phiLogisticTail(y), want, 1e-9, `y=${y}`);
    }
  });
});

describe('detector crossings with shipped defaults', () => {
  it('Akka: mean 1 s, σ floored at 100 ms, pause 3 s → fires ≈ 4.52 s after the last heartbeat', () => {
    const stats = { meanMs: 1000, stdDevMs: 20 };
    const s = silenceAtPhi(8, (x) => phiLogistic(x, stats, 3000, 100));
    close(s, 4523, 2, 'Akka silence at φ 8');
  });
  it('Akka on bootstrap statistics (σ = 250 ms) fires later', () => {
    const s = silenceAtPhi(8, (x) => phiLogistic(x, { meanMs: 1000, stdDevMs: 250 }, 3000, 100));
    close(s, 4000 + 5.23 * 250, 5, 'bootstrap crossing');
  });
  it('normal φ with the same knobs fires at mean + pause + 5.61 σ', () => {
    const s = silenceAtPhi(8, (x) => phiNormal(x, { meanMs: 1000, stdDevMs: 100 }, 3000, 100));
    close(s, 4561, 2, 'normal crossing');
  });
  it('Cassandra: φ = Δ / (mean · ln 10); convicts at 8 · ln 10 ≈ 18.42 mean intervals', () => {
    const table: [number, number, number][] = [
      [0, 1000, 0],
      [1000, 1000, 1 / Math.LN10],
      [18_420.68, 1000, 8],
      [36_841.36, 2000, 8],
    ];
    for (const [silence, mean, want] of table) {
      close(phiExponential(silence, { meanMs: mean, stdDevMs: 0 }), want, 1e-4, `Δ=${silence}`);
    }
  });
});
