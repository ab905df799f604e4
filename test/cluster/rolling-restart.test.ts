// A rolling restart of a 3-member tenure cluster (SIGTERM, restart, wait until caught up, next)
// while three clients write through the SDK: no write fails, none acknowledged is lost, and the
// longest time without an acknowledgement is printed (never asserted: it is a measurement).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rollingRestart } from './rolling-restart.js';

test(
  'rolling restart of tenure under writes: no failure, no lost write',
  { timeout: 180_000 },
  async (t) => {
    const r = await rollingRestart('tenure');
    t.diagnostic(
      `writes acknowledged ${r.acked.size}; longest gap between acknowledgements ` +
        `${r.longestGapMs.toFixed(0)} ms; steps ` +
        r.steps
          .map((s) => `${s.name}${s.led ? ' (leader)' : ''} stopped in ${s.stopMs.toFixed(0)} ms`)
          .join(', '),
    );
    assert.deepEqual(r.failures, [], 'the SDK retried or the member held every write');
    assert.ok(
      r.steps.some((s) => s.led),
      'at least one step stopped the leader',
    );
    const lost = [...r.acked].filter(([k, v]) => r.stored.get(k) !== v);
    assert.deepEqual(lost, [], 'every acknowledged write is there');
  },
);
