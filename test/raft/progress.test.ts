// Table tests for the leader's view of one follower (src/core/raft/progress.ts): the probe,
// replicate and snapshot states and the inflight window (thesis §10.2.1).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { Progress } from '../../src/core/raft/progress.js';

const at = logIndex;

void test('probe: one append at a time until it is answered', () => {
  const pr = new Progress(at(5), 2);
  assert.equal(pr.state, 'probe');
  assert.equal(pr.canSend(), true);
  pr.sentAppend(at(6), 2);
  assert.equal(pr.canSend(), false, 'paused while the probe is in flight');
  assert.equal(pr.next, 5, 'probe does not move next optimistically');
  assert.equal(pr.maybeUpdate(at(6)), true);
  assert.deepEqual([pr.match, pr.next, pr.canSend()], [6, 7, true]);
  assert.equal(pr.maybeUpdate(at(4)), false, 'a stale success changes nothing');
  assert.equal(pr.match, 6);
});

void test('probe -> replicate: pipelined appends within the inflight window', () => {
  const pr = new Progress(at(1), 2);
  pr.maybeUpdate(at(3));
  pr.becomeReplicate();
  assert.deepEqual([pr.state, pr.next], ['replicate', 4]);
  pr.sentAppend(at(5), 2);
  assert.deepEqual([pr.next, pr.canSend()], [6, true], 'next moves optimistically');
  pr.sentAppend(at(7), 2);
  assert.equal(pr.canSend(), false, 'window of 2 is full');
  pr.sentAppend(at(7), 0);
  assert.equal(pr.canSend(), false, 'an empty append takes no slot');
  assert.equal(pr.maybeUpdate(at(5)), true);
  assert.equal(pr.canSend(), true, 'acknowledging the first append frees its slot');
  assert.equal(pr.maybeUpdate(at(7)), true);
  assert.deepEqual([pr.match, pr.next], [7, 8]);
});

void test('rejections: stale ones are ignored, fresh ones move next', () => {
  const cases: {
    name: string;
    setup: (pr: Progress) => void;
    rejected: number;
    probeNext: number;
    want: { ok: boolean; next: number };
  }[] = [
    {
      name: 'replicate: rejection at or below match is stale',
      setup: (pr) => {
        pr.maybeUpdate(at(5));
        pr.becomeReplicate();
        pr.sentAppend(at(8), 3);
      },
      rejected: 5,
      probeNext: 1,
      want: { ok: false, next: 9 },
    },
    {
      name: 'replicate: fresh rejection falls back to match+1',
      setup: (pr) => {
        pr.maybeUpdate(at(5));
        pr.becomeReplicate();
        pr.sentAppend(at(8), 3);
      },
      rejected: 8,
      probeNext: 2,
      want: { ok: true, next: 6 },
    },
    {
      name: 'probe: rejection of an append we did not just send is stale',
      setup: () => {},
      rejected: 7,
      probeNext: 3,
      want: { ok: false, next: 10 },
    },
    {
      name: 'probe: the hint moves next back',
      setup: () => {},
      rejected: 9,
      probeNext: 4,
      want: { ok: true, next: 4 },
    },
    {
      name: 'probe: a hint beyond the rejected index is capped by it',
      setup: () => {},
      rejected: 9,
      probeNext: 12,
      want: { ok: true, next: 9 },
    },
    {
      name: 'probe: never below match+1',
      setup: (pr) => {
        pr.maybeUpdate(at(6));
        pr.next = at(10);
      },
      rejected: 9,
      probeNext: 2,
      want: { ok: true, next: 7 },
    },
  ];
  for (const c of cases) {
    const pr = new Progress(at(10), 4);
    c.setup(pr);
    const ok = pr.maybeDecrTo(at(c.rejected), at(c.probeNext));
    assert.deepEqual({ ok, next: pr.next }, c.want, c.name);
  }
});

void test('snapshot: paused until acknowledged, then probe after the snapshot index', () => {
  const pr = new Progress(at(3), 4);
  pr.maybeUpdate(at(2));
  pr.becomeSnapshot(at(20));
  assert.deepEqual([pr.state, pr.pendingSnapshot, pr.canSend()], ['snapshot', 20, false]);
  pr.becomeProbe();
  assert.deepEqual([pr.state, pr.next, pr.pendingSnapshot], ['probe', 21, 0]);
});

void test('becomeProbe from replicate restarts at match+1 with an empty window', () => {
  const pr = new Progress(at(1), 1);
  pr.maybeUpdate(at(4));
  pr.becomeReplicate();
  pr.sentAppend(at(9), 5);
  assert.equal(pr.canSend(), false);
  pr.becomeProbe();
  assert.deepEqual([pr.state, pr.next, pr.canSend()], ['probe', 5, true]);
});
