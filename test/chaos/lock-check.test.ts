// The locks workload's verdict (src/chaos/workloads/lock-check.ts) on a replayed scenario, through
// the workload's own fence: holder A (token 5) is paused past its lease, B (token 7) is granted
// after A's lease ran out and writes, then A resumes and writes with its old token. Through the
// memory fence A's late write is refused and nothing is wrong; through the open fence (the
// test-only stand-in for a fence turned off) it is accepted, and the verdict must say so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeaseRenewal } from '../../src/check/lease-contract.js';
import { judgeLocks, type RecordedHold } from '../../src/chaos/workloads/lock-check.js';
import { LocksFence, type FenceKind } from '../../src/chaos/workloads/lock-fence.js';

const ctx = {
  driftRatioDuring: () => 0.005,
  at: (ms: number) => `${(ms / 1000).toFixed(3)}s`,
  endMs: 20_000,
};

// A: lease 1, TTL 2 s granted at 0 and renewed at 600; paused from 1 000 to 5 000.
// B: lease 2, granted at 3 000 (after A's last promise, 2 590 ms), requested at 500.
const holds: RecordedHold[] = [
  {
    hold: 0,
    lock: 'a',
    client: 0,
    lease: '1',
    token: 5,
    requestedMs: 0,
    acquiredMs: 100,
    releasedMs: 5_100,
  },
  {
    hold: 1,
    lock: 'a',
    client: 1,
    lease: '2',
    token: 7,
    requestedMs: 500,
    acquiredMs: 3_000,
    releasedMs: 4_500,
  },
];
const renewals: LeaseRenewal[] = [
  { lease: '1', client: 0, sentMs: 0, answeredMs: 10, ttlSeconds: 2 },
  { lease: '1', client: 0, sentMs: 600, answeredMs: 610, ttlSeconds: 2 },
  { lease: '2', client: 1, sentMs: 2_900, answeredMs: 2_910, ttlSeconds: 2 },
  { lease: '2', client: 1, sentMs: 3_500, answeredMs: 3_510, ttlSeconds: 2 },
];

/** The writes in the order the fence judged them; atMs is fixed afterwards for the replay. */
async function replay(kind: FenceKind): Promise<LocksFence> {
  const fence = new LocksFence(kind);
  const writes: [hold: number, token: bigint, atMs: number][] = [
    [0, 5n, 200],
    [0, 5n, 900],
    [1, 7n, 3_100],
    [1, 7n, 3_400],
    // A resumed: its late write with the old token.
    [0, 5n, 5_010],
  ];
  for (const [hold, token] of writes) await fence.write('a', hold, hold, token);
  fence.log.forEach((w, i) =>
    Object.assign(w, { atMs: (writes[i] as [number, bigint, number])[2] }),
  );
  return fence;
}

test('the memory fence refuses the resumed holder, and the verdict is clean', async () => {
  const fence = await replay('memory');
  assert.deepEqual(
    fence.log.map((w) => w.accepted),
    [true, true, true, true, false],
  );
  const v = judgeLocks({ holds, renewals, fence: fence.log, pauses: [] }, ctx);
  assert.deepEqual(v.anomalies, []);
  assert.equal(v.uncertainEffects, 0);
});

test('an open fence lets the stale write through, and the verdict names it', async () => {
  const fence = await replay('open');
  assert.ok(fence.log.every((w) => w.accepted));
  const pauses = [{ client: 0, fromMs: 1_000, toMs: 5_000, beyondTtl: true }];
  const v = judgeLocks({ holds, renewals, fence: fence.log, pauses }, ctx);
  const kinds = v.anomalies.map((a) => a.kind).sort();
  assert.deepEqual(kinds, ['fence-accepted-stale', 'stale-effect']);
  for (const a of v.anomalies) {
    assert.equal(a.workload, 'locks');
    assert.equal(a.atMs, 5_010);
    assert.ok(
      a.excerpt.some((l) => l.includes('paused (SIGSTOP)')),
      a.excerpt.join('\n'),
    );
  }
  // The late write came past every promise of A's lease: counted, not an anomaly by itself.
  assert.equal(v.uncertainEffects, 1);
});

test('a grant inside an acknowledged lease is a lease-overlap, judged on the run clock', () => {
  // B granted at 2 000, while A's renewal at 600 promised it until about 2 590.
  const early = holds.map((h) => (h.hold === 1 ? { ...h, acquiredMs: 2_000 } : h));
  const v = judgeLocks(
    { holds: early, renewals, fence: [], pauses: [] },
    { ...ctx, originMs: 1_000, at: (ms) => `${ms}` },
  );
  assert.deepEqual(
    v.anomalies.map((a) => a.kind),
    ['lease-overlap'],
  );
  assert.equal(v.anomalies[0]?.atMs, 2_000);
});
