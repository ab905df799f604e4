// Leases (etcd's server/lease/lessor.go; the refresh on a new leader: docs/leases-and-time.md):
// grant (chosen and given IDs, TTL minimum and maximum, existing ID), attach/detach through puts
// and deletes, revoke deleting keys in one revision, keepalive, refresh on a new leader,
// TimeToLive and Leases, expiry as a query with time passed in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_ETCD_LIMITS } from '../../src/core/state/etcd-limits.js';
import { b, errorOf, Harness, ok, str } from './fixtures.js';

void test('grant: given ID, chosen ID, TTL raised to the minimum, errors', () => {
  const h = new Harness();
  const g = ok(h.grant(10n, 30), 'leaseGrant');
  assert.deepEqual([g.id, g.ttlSeconds, g.header.revision], [10n, 30, 1]);
  assert.equal(ok(h.grant(11n, 1), 'leaseGrant').ttlSeconds, 2, 'TTL below the minimum is raised');
  assert.equal(ok(h.grant(12n, -5), 'leaseGrant').ttlSeconds, 2);
  assert.deepEqual(
    { ...errorOf(h.grant(10n, 30)) },
    { code: 'FailedPrecondition', message: 'etcdserver: lease already exists' },
  );
  assert.deepEqual(
    { ...errorOf(h.grant(13n, 9_000_000_001)) },
    { code: 'OutOfRange', message: 'etcdserver: too large lease TTL' },
  );
  ok(h.grant(14n, 9_000_000_000), 'leaseGrant');
  const a = ok(h.grant(0n, 5), 'leaseGrant').id;
  const c = ok(h.grant(0n, 5), 'leaseGrant').id;
  assert.ok(a > 0n && c > 0n && a !== c && a < 1n << 63n);
  assert.deepEqual(
    h.m.leaseLeases().leases,
    [10n, 11n, 12n, 14n, a, c].sort((x, y) => (x < y ? -1 : 1)),
  );
  // The chosen ID is a function of the log: machines fed the same entries agree.
  const twin = new Harness();
  const grantAt3 = () => {
    twin.run({ type: 'leaseRefreshAll', nowMs: 0, extraMs: 0 });
    return ok(twin.grant(0n, 5), 'leaseGrant').id;
  };
  const other = new Harness();
  other.run({ type: 'leaseRefreshAll', nowMs: 0, extraMs: 0 });
  assert.equal(grantAt3(), ok(other.grant(0n, 5), 'leaseGrant').id);
});

void test('the TTL minimum comes from the limits', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, leaseTtlMinSeconds: 5 });
  assert.equal(ok(h.grant(1n, 3), 'leaseGrant').ttlSeconds, 5);
});

void test('revoke deletes every attached key in one revision', () => {
  const h = new Harness();
  ok(h.grant(1n, 60), 'leaseGrant');
  ok(h.grant(2n, 60), 'leaseGrant');
  h.put('c', '1', { lease: 1n }); // 2
  h.put('a', '1', { lease: 1n }); // 3
  h.put('b', '1', { lease: 2n }); // 4
  h.put('d', '1'); // 5
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), rangeEnd: b('z') });
  hub.drain();
  const r = ok(h.revoke(1n), 'leaseRevoke');
  assert.equal(r.header.revision, 6);
  assert.deepEqual(h.dump(), ['b=1', 'd=1']);
  const events = hub.drain().flatMap((x) => x.events);
  assert.deepEqual(
    events.map((e) => `${e.type} ${str(e.kv.key)} ${e.kv.modRevision}`),
    ['DELETE a 6', 'DELETE c 6'],
  );
  assert.deepEqual(
    { ...errorOf(h.revoke(1n)) },
    { code: 'NotFound', message: 'etcdserver: requested lease not found' },
  );
  // A lease without keys revokes without a new revision.
  ok(h.grant(3n, 60), 'leaseGrant');
  assert.equal(ok(h.revoke(3n), 'leaseRevoke').header.revision, 6);
});

void test('puts move keys between leases; deletes detach them', () => {
  const h = new Harness();
  ok(h.grant(1n, 60), 'leaseGrant');
  ok(h.grant(2n, 60), 'leaseGrant');
  h.put('k', '1', { lease: 1n });
  h.put('j', '1', { lease: 1n });
  h.put('k', '2', { lease: 2n });
  h.put('j', '2'); // lease 0 detaches
  h.put('x', '1', { lease: 2n });
  h.del('x');
  const keys = (id: bigint) => h.m.leaseTimeToLive(id, 0, true).keys.map(str);
  assert.deepEqual(keys(1n), []);
  assert.deepEqual(keys(2n), ['k']);
  ok(h.revoke(1n), 'leaseRevoke');
  assert.deepEqual(h.dump(), ['j=2', 'k=2'], 'revoking the old lease leaves moved keys alone');
});

void test('TimeToLive and keepalive with time passed in', () => {
  const h = new Harness();
  ok(h.grant(1n, 10, 1_000), 'leaseGrant'); // deadline 11_000
  h.put('k', 'v', { lease: 1n });
  const t = h.m.leaseTimeToLive(1n, 4_500, true);
  assert.deepEqual([t.ttlSeconds, t.grantedTtlSeconds, t.keys.map(str)], [6, 10, ['k']]);
  assert.deepEqual(h.m.leaseTimeToLive(1n, 4_500, false).keys, []);
  assert.equal(h.m.leaseTimeToLive(1n, 20_000, false).ttlSeconds, 0, 'past the deadline: 0');
  const unknown = h.m.leaseTimeToLive(9n, 0, true);
  assert.deepEqual(
    [unknown.ttlSeconds, unknown.grantedTtlSeconds, unknown.keys.length],
    [-1, 0, 0],
  );
  assert.deepEqual(h.m.expiredLeases(10_999, 10), []);
  assert.deepEqual(h.m.expiredLeases(11_000, 10), [1n]);
  const ka = ok(h.run({ type: 'leaseKeepAlive', id: 1n, nowMs: 8_000 }), 'leaseKeepAlive');
  assert.deepEqual([ka.id, ka.ttlSeconds], [1n, 10]);
  assert.deepEqual(h.m.expiredLeases(11_000, 10), []);
  assert.equal(h.m.leaseTimeToLive(1n, 8_000, false).ttlSeconds, 10);
  const none = ok(h.run({ type: 'leaseKeepAlive', id: 9n, nowMs: 0 }), 'leaseKeepAlive');
  assert.equal(none.ttlSeconds, 0, 'an unknown lease renews to TTL 0, not an error');
  // An expired lease stays usable until a revoke is applied.
  ok(h.put('k2', 'v', { lease: 1n }), 'put');
});

void test('a new leader refreshes every lease to a full TTL from its own clock', () => {
  const h = new Harness();
  ok(h.grant(1n, 10, 0), 'leaseGrant');
  ok(h.grant(2n, 20, 0), 'leaseGrant');
  assert.deepEqual(h.m.expiredLeases(50_000, 10), [1n, 2n], 'earliest deadline first');
  assert.deepEqual(h.m.expiredLeases(50_000, 1), [1n], 'at most max');
  ok(h.run({ type: 'leaseRefreshAll', nowMs: 100, extraMs: 1_000 }), 'leaseRefreshAll');
  assert.deepEqual(h.m.expiredLeases(11_099, 10), []);
  assert.deepEqual(h.m.expiredLeases(11_100, 10), [1n]);
  assert.equal(h.m.leaseTimeToLive(2n, 100, false).ttlSeconds, 21);
});

void test('explicit IDs may be any non-zero int64; beyond int64 is a malformed command', () => {
  const h = new Harness();
  assert.equal(ok(h.grant(-5n, 10), 'leaseGrant').id, -5n);
  assert.equal(ok(h.grant((1n << 63n) - 1n, 10), 'leaseGrant').id, (1n << 63n) - 1n);
  assert.equal(errorOf(h.grant(1n << 63n, 10)).message, 'tenure: malformed command');
  assert.deepEqual(h.m.leaseLeases().leases, [-5n, (1n << 63n) - 1n]);
});

void test('checkpoints let the next leader continue from the remaining TTL', () => {
  const h = new Harness();
  ok(h.grant(1n, 60, 0), 'leaseGrant');
  ok(h.grant(2n, 60, 0), 'leaseGrant');
  ok(h.grant(3n, 60, 0), 'leaseGrant');
  const cp = h.run({
    type: 'leaseCheckpoint',
    checkpoints: [
      { id: 1n, remainingTtlSeconds: 15 },
      { id: 2n, remainingTtlSeconds: 15 },
      { id: 9n, remainingTtlSeconds: 5 },
    ],
  });
  ok(cp, 'leaseCheckpoint');
  ok(h.run({ type: 'leaseKeepAlive', id: 2n, nowMs: 0 }), 'leaseKeepAlive'); // clears 2's checkpoint
  ok(h.run({ type: 'leaseRefreshAll', nowMs: 100_000, extraMs: 0 }), 'leaseRefreshAll');
  const ttl = (id: bigint) => h.m.leaseTimeToLive(id, 100_000, false).ttlSeconds;
  assert.deepEqual([ttl(1n), ttl(2n), ttl(3n)], [15, 60, 60]);
  // The checkpoint survives a snapshot.
  const r = new Harness();
  r.m.restore(h.m.snapshot());
  assert.equal(r.m.digest(), h.m.digest());
});

void test('a refresh continues a checkpoint stretched by 2ρ, capped, and consumes it', () => {
  const h = new Harness();
  for (const id of [1n, 2n, 3n, 4n]) ok(h.grant(id, 10, 0), 'leaseGrant');
  ok(
    h.run({
      type: 'leaseCheckpoint',
      checkpoints: [
        { id: 1n, remainingTtlSeconds: 2.5 },
        { id: 2n, remainingTtlSeconds: 4 },
        { id: 3n, remainingTtlSeconds: 10 },
      ],
    }),
    'leaseCheckpoint',
  );
  // A reset (null) clears 2's checkpoint: its renewal was answered after the checkpoint.
  ok(
    h.run({ type: 'leaseCheckpoint', checkpoints: [{ id: 2n, remainingTtlSeconds: null }] }),
    'leaseCheckpoint',
  );
  assert.deepEqual(
    [1n, 2n, 3n, 4n].map((id) => h.m.leaseInfo(id)?.checkpointed),
    [true, false, true, false],
  );
  ok(h.run({ type: 'leaseRefreshAll', nowMs: 50_000, extraMs: 1000 }), 'leaseRefreshAll');
  const deadline = (id: bigint) => h.m.leaseInfo(id)?.deadlineMs;
  // 2500 ms × (1 + 2 × 0.005); a lease without a checkpoint gets TTL + extra; a checkpoint of the
  // full TTL is stretched to 10,100 ms, still under the 11,000 ms without one.
  assert.equal(deadline(1n), 50_000 + 2525);
  assert.equal(deadline(2n), 50_000 + 11_000);
  assert.equal(deadline(3n), 50_000 + 10_100);
  assert.equal(deadline(4n), 50_000 + 11_000);
  // The refresh consumed the checkpoints: the leader after next grants the full TTL again.
  assert.ok([1n, 2n, 3n, 4n].every((id) => h.m.leaseInfo(id)?.checkpointed === false));
  ok(h.run({ type: 'leaseRefreshAll', nowMs: 60_000, extraMs: 1000 }), 'leaseRefreshAll');
  assert.equal(deadline(1n), 60_000 + 11_000);
});

void test('a checkpoint stretch never exceeds the refresh without one (small extra time)', () => {
  const h = new Harness();
  ok(h.grant(1n, 10, 0), 'leaseGrant');
  ok(
    h.run({ type: 'leaseCheckpoint', checkpoints: [{ id: 1n, remainingTtlSeconds: 10 }] }),
    'leaseCheckpoint',
  );
  ok(h.run({ type: 'leaseRefreshAll', nowMs: 0, extraMs: 0 }), 'leaseRefreshAll');
  assert.equal(h.m.leaseInfo(1n)?.deadlineMs, 10_000, 'capped at TTL + extra');
});

void test('a checkpoint of a revoked lease is ignored; a re-grant starts without one', () => {
  const h = new Harness();
  ok(h.grant(5n, 10, 0), 'leaseGrant');
  ok(
    h.run({ type: 'leaseCheckpoint', checkpoints: [{ id: 5n, remainingTtlSeconds: 1 }] }),
    'leaseCheckpoint',
  );
  ok(h.run({ type: 'leaseRevoke', id: 5n }), 'leaseRevoke');
  ok(
    h.run({ type: 'leaseCheckpoint', checkpoints: [{ id: 5n, remainingTtlSeconds: 1 }] }),
    'leaseCheckpoint',
  );
  assert.equal(h.m.leaseInfo(5n), undefined);
  ok(h.grant(5n, 10, 0), 'leaseGrant');
  assert.equal(h.m.leaseInfo(5n)?.checkpointed, false);
});

void test('an expired lease is not renewed; an expiry revoke yields to a renewal applied first', () => {
  const h = new Harness();
  ok(h.grant(20n, 5, 0), 'leaseGrant');
  // Deadline 5000 ms on the leader's clock: a renewal at 5000 is too late.
  const late = ok(h.run({ type: 'leaseKeepAlive', id: 20n, nowMs: 5000 }), 'leaseKeepAlive');
  assert.equal(late.ttlSeconds, 0);
  // Another lease renewed at 4000 (deadline 9000) before the revoke decided at 5000 applies.
  ok(h.grant(21n, 5, 0), 'leaseGrant');
  ok(h.run({ type: 'leaseKeepAlive', id: 21n, nowMs: 4000 }), 'leaseKeepAlive');
  ok(h.run({ type: 'leaseRevoke', id: 21n, ifExpiredAtMs: 5000 }), 'leaseRevoke');
  assert.ok(h.m.leaseLeases().leases.includes(21n), 'renewed lease survives the stale revoke');
  ok(h.run({ type: 'leaseRevoke', id: 20n, ifExpiredAtMs: 5000 }), 'leaseRevoke');
  assert.ok(!h.m.leaseLeases().leases.includes(20n), 'expired lease is revoked');
});
