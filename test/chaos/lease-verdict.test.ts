// The leases workload's verdict: a lease gone before its latest promise is one lease-contract
// anomaly dated by the loss and quoting the lease's records; a loss after the promise, or after a
// revoke was sent, is none; a renewal whose promise overlapped a skewed clock is judged with the
// skew's bound. Key names round-trip to their lease.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClockWindows } from '../../src/chaos/clock-windows.js';
import { Timeline } from '../../src/chaos/timeline.js';
import { LeaseEvents, leaseKey, leaseOfKey } from '../../src/chaos/workloads/lease-events.js';
import { judgeLeases } from '../../src/chaos/workloads/lease-verdict.js';

/** Lease 7: granted at 1000 with TTL 3, renewed at 2000 (promise ≈ 4985 at 0.5 % drift). */
function events(): LeaseEvents {
  const ev = new LeaseEvents();
  const base = { lease: '7', client: 2, ttlSeconds: 3, answeredBy: 'm1' };
  ev.renewal({ ...base, sentMs: 1000, answeredMs: 1010, via: 'grant' });
  ev.renewal({ ...base, sentMs: 2000, answeredMs: 2020, via: 'keepalive' });
  return ev;
}

const judge = (ev: LeaseEvents, clocks = new ClockWindows()) =>
  judgeLeases({ name: 'leases', events: ev, clocks, timeline: new Timeline(), ops: 3, unknown: 0 });

test('a lease gone before its latest promise is one lease-contract anomaly', () => {
  const ev = events();
  ev.loss({ lease: '7', atMs: 4000, evidence: 'watch saw the DELETE', source: 'watch m2' });
  ev.loss({ lease: '7', atMs: 4100, evidence: 'read saw it absent', source: 'read m3' });
  const r = judge(ev);
  assert.equal(r.verdict, 'anomalies');
  assert.equal(r.anomalies.length, 1);
  const a = r.anomalies[0];
  assert.equal(a?.kind, 'lease-contract');
  assert.equal(a?.atMs, 4000);
  assert.match(
    a?.message ?? '',
    /lease 7: gone by .*watch saw the DELETE.*before the promise of the keepalive client 2/,
  );
  assert.ok(a?.excerpt.some((l) => l.includes('<- promise broken')));
  assert.ok(a?.excerpt.some((l) => l.includes('<- loss')));
  assert.match(r.detail ?? '', /^2 losses before a promise on 1 leases/);
});

test('a loss after the promise, or after a revoke was sent, is no anomaly', () => {
  const late = events();
  late.loss({ lease: '7', atMs: 5000, evidence: 'read', source: 'read m1' });
  assert.equal(judge(late).verdict, 'ok');
  const revoked = events();
  revoked.revocation({ lease: '7', client: 2, sentMs: 2500 });
  revoked.loss({ lease: '7', atMs: 2600, evidence: 'read', source: 'read m1' });
  assert.equal(judge(revoked).verdict, 'ok');
});

test('a renewal whose promise overlapped a skewed clock is judged with its skew', () => {
  const ev = events();
  ev.loss({ lease: '7', atMs: 4000, evidence: 'read', source: 'read m1' });
  const clocks = new ClockWindows();
  // Member 0 ran at ×2 from 1500 to 2500: the keepalive at 2000 promises 1.5 s, until 3500.
  clocks.begin(0, 2, 1500);
  clocks.end(0, 2500);
  assert.equal(judge(ev, clocks).verdict, 'ok');
});

test('a key names its lease', () => {
  assert.equal(leaseKey('42', 0), 'chaos/leases/42/k');
  assert.equal(leaseKey('42', 1), 'chaos/leases/42/k2');
  assert.equal(leaseOfKey(leaseKey('42', 1)), '42');
  assert.equal(leaseOfKey('chaos/register/0/1'), undefined);
});
