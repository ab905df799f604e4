import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Awareness } from './awareness.js';
import { decayedPenalty, FlapDamper, timeToDecayMs } from './flap-damper.js';

describe('Awareness (Lifeguard local health multiplier)', () => {
  it('saturates in [0, max − 1] and scales timeouts by (score + 1)', () => {
    const a = new Awareness(8);
    const steps: [number, number][] = [
      [1, 1],
      [2, 3],
      [10, 7],
      [-1, 6],
      [-20, 0],
    ];
    for (const [delta, score] of steps) {
      assert.equal(a.apply(delta), score);
      assert.equal(a.scale(1000), (score + 1) * 1000);
    }
  });
  it('max ≤ 1 disables it', () => {
    const a = new Awareness(1);
    a.apply(5);
    assert.equal(a.scale(500), 500);
  });
});

describe('FlapDamper', () => {
  const cfg = { penalty: 1000, suppressAt: 2100, reuseBelow: 1000, halfLifeMs: 600_000 };
  it('decays by half each half-life', () => {
    const table: [number, number][] = [
      [0, 1000],
      [600_000, 500],
      [1_200_000, 250],
    ];
    for (const [t, want] of table)
      assert.ok(Math.abs(decayedPenalty(1000, t, 600_000) - want) < 1e-9);
    assert.ok(Math.abs(timeToDecayMs(2000, 1000, 600_000) - 600_001) < 1e-6);
  });
  it('two quick flaps do not suppress; three within 10 min do', () => {
    const d = new FlapDamper(cfg);
    assert.ok(!d.flap(0));
    assert.ok(!d.flap(1000));
    const e = new FlapDamper(cfg);
    e.flap(0);
    e.flap(300_000);
    assert.ok(e.flap(600_000));
  });
  it('releases once the penalty decays below reuse', () => {
    const d = new FlapDamper(cfg);
    d.flap(0);
    d.flap(0);
    d.flap(0);
    assert.ok(d.suppressed);
    const at = d.releaseAtMs();
    assert.ok(!d.release(at - 1000));
    assert.ok(d.release(at));
    assert.ok(!d.suppressed);
  });
});
