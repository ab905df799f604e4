import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../../base/index.js';
import { ProbeOrder } from './probe-order.js';
import { MEMBERLIST_LAN, SwimConfigError, TENURE_LAN, validateSwimConfig } from './config.js';

describe('ProbeOrder (SWIM round-robin over a shuffled list)', () => {
  it('probes every member exactly once per pass', () => {
    const o = new ProbeOrder(prng(7));
    const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
    for (const n of names) o.add(n);
    for (let pass = 0; pass < 5; pass++) {
      const seen = new Set<string>();
      for (let i = 0; i < names.length; i++) seen.add(o.next(() => true) as string);
      assert.equal(seen.size, names.length, `pass ${pass}`);
    }
  });
  it('skips ineligible members and returns undefined when none is eligible', () => {
    const o = new ProbeOrder(prng(1));
    o.add('a');
    o.add('b');
    assert.equal(
      o.next((n) => n === 'b'),
      'b',
    );
    assert.equal(
      o.next(() => false),
      undefined,
    );
    o.remove('a');
    assert.equal(o.size, 1);
  });
});

describe('validateSwimConfig', () => {
  it('accepts the presets', () => {
    validateSwimConfig(TENURE_LAN);
    validateSwimConfig(MEMBERLIST_LAN);
  });
  it('names the bad field', () => {
    const bad: [object, string][] = [
      [{ probeIntervalMs: 0 }, 'probeIntervalMs'],
      [{ probeDeadlineMs: 100 }, 'probeDeadlineMs'],
      [{ indirectChecks: 1.5 }, 'indirectChecks'],
      [{ piggybackMax: 0 }, 'piggybackMax'],
      [{ watch: { ...TENURE_LAN.watch, windowSize: 1 } }, 'watch.windowSize'],
      [
        { flapDamping: { penalty: 1, suppressAt: 1, reuseBelow: 2, halfLifeMs: 1 } },
        'flapDamping.reuseBelow',
      ],
    ];
    for (const [patch, field] of bad) {
      assert.throws(
        () => validateSwimConfig({ ...TENURE_LAN, ...patch }),
        (e: unknown) => e instanceof SwimConfigError && e.field === field,
        field,
      );
    }
  });
});
