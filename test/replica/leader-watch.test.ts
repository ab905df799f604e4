// LeaderWatch: the detector that judges a leader's silence must let a pause up to the tolerance
// pass, fire not long after it, start afresh for a new leader, and not count the observer's own
// stall as the leader's silence.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeId } from '../../src/core/base/units.js';
import { LeaderWatch, type LeaderDetectorKind } from '../../src/replica/leader-watch.js';

const HEARTBEAT_MS = 100;
const PAUSE_MS = 1500;
const leader = 2 as NodeId;

/** A watch fed a second of regular heartbeats; the time of the last. */
function fed(kind: LeaderDetectorKind): { w: LeaderWatch; last: number } {
  const w = new LeaderWatch({ kind, heartbeatMs: HEARTBEAT_MS, pauseToleranceMs: PAUSE_MS });
  let t = 0;
  for (let i = 0; i < 10; i++) w.heard(leader, (t += HEARTBEAT_MS + (i % 3)));
  return { w, last: t };
}

for (const kind of ['phi', 'fixed'] as const) {
  test(`${kind}: a pause up to the tolerance passes; a longer silence is judged`, () => {
    const { w, last } = fed(kind);
    // The last heartbeat before a pause may come up to one interval before it starts.
    assert.equal(w.silent(leader, last + PAUSE_MS + HEARTBEAT_MS), false);
    assert.ok(w.level(leader, last + PAUSE_MS) < 8);
    assert.equal(w.silent(leader, last + PAUSE_MS + 5 * HEARTBEAT_MS), true);
  });

  test(`${kind}: a new leader starts afresh; the observer's stall is not silence`, () => {
    const { w, last } = fed(kind);
    const late = last + PAUSE_MS + 10 * HEARTBEAT_MS;
    assert.equal(w.silent(leader, late), true);
    assert.equal(w.silent(3 as NodeId, late), false, 'nothing known of another leader');
    w.heard(3 as NodeId, late);
    assert.equal(w.silent(3 as NodeId, late + HEARTBEAT_MS), false);
    const { w: v, last: l } = fed(kind);
    v.shift(PAUSE_MS * 2);
    assert.equal(v.silent(leader, l + PAUSE_MS * 2 + HEARTBEAT_MS), false, 'shifted by the stall');
  });
}
