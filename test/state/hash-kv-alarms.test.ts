// HashKV (etcd mvcc/kvstore.go HashByRev) and alarms (etcd apply.go Alarm, corrupt.go
// applierV3Corrupt) on the key-space machine: the hash of a revision does not change as later
// writes arrive, is the same on any machine with the same history (restored from a snapshot or
// not), and differs when one value does; etcd's errors for compacted and future revisions; what
// a CORRUPT and a NOSPACE alarm refuse, and that alarms survive a snapshot.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { logIndex } from '../../src/core/base/units.js';
import { encodeCommand } from '../../src/core/state/command.js';
import type { AlarmMember } from '../../src/core/state/alarms.js';
import {
  ERR_COMPACTED,
  ERR_CORRUPT,
  ERR_FUTURE_REV,
  ERR_NO_SPACE,
  isEtcdError,
} from '../../src/core/state/etcd-errors.js';
import { DEFAULT_ETCD_LIMITS } from '../../src/core/state/etcd-limits.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import { b, errorOf, Harness, ok, str } from './fixtures.js';

function hashAt(m: EtcdMachine, rev: number): { hash: number; compact: number; current: number } {
  const plan = m.hashKv(rev);
  if (isEtcdError(plan)) assert.fail(`hashKv(${rev}): ${plan.message}`);
  let steps = 0;
  while (!plan.job.step()) steps++;
  assert.ok(steps >= 0);
  return { hash: plan.job.hash, compact: plan.compactRevision, current: plan.revision };
}

/** A history with puts, overwrites, a delete, a txn and a lease. */
function history(h: Harness): void {
  h.put('a', '1'); // 2
  h.put('b', '1'); // 3
  h.put('a', '2'); // 4
  h.del('b'); // 5
  ok(h.grant(7n, 60), 'leaseGrant');
  h.put('c', 'x', { lease: 7n }); // 6
  h.txn({
    compare: [],
    success: [
      { type: 'put', request: { key: b('d'), value: b('1') } },
      { type: 'put', request: { key: b('e'), value: b('1') } },
    ],
    failure: [],
  }); // 7
}

void test('the hash of a revision stays the same as later writes arrive', () => {
  const h = new Harness();
  history(h);
  const at4 = hashAt(h.m, 4).hash;
  const at7 = hashAt(h.m, 0);
  assert.equal(at7.current, 7);
  assert.equal(at7.compact, -1, 'etcd reports -1 before any compaction');
  h.put('a', '3');
  h.put('z', '1');
  assert.equal(hashAt(h.m, 4).hash, at4);
  assert.equal(hashAt(h.m, 7).hash, at7.hash);
  assert.notEqual(hashAt(h.m, 0).hash, at7.hash);
  assert.notEqual(at4, at7.hash);
});

void test('machines with the same history hash alike; a snapshot restore keeps the hash', () => {
  const x = new Harness();
  const y = new Harness();
  history(x);
  history(y);
  for (const rev of [2, 3, 4, 5, 6, 7]) assert.equal(hashAt(x.m, rev).hash, hashAt(y.m, rev).hash);
  const z = new EtcdMachine();
  z.restore(x.m.snapshot());
  for (const rev of [2, 5, 7]) assert.equal(hashAt(z, rev).hash, hashAt(x.m, rev).hash);
});

void test('one different value, or one corrupted by the planted bug, changes the hash', () => {
  const x = new Harness();
  const y = new Harness();
  history(x);
  history(y);
  x.put('k', 'value');
  y.put('k', 'valuf');
  assert.notEqual(hashAt(x.m, 0).hash, hashAt(y.m, 0).hash);
  assert.equal(hashAt(x.m, 7).hash, hashAt(y.m, 7).hash, 'the revision before still agrees');

  const broken = new EtcdMachine(DEFAULT_ETCD_LIMITS, new Set(['applyCorruptsValue']));
  const plain = new EtcdMachine(DEFAULT_ETCD_LIMITS, NO_MUTANTS);
  const put = encodeCommand({ type: 'put', request: { key: b('k'), value: b('v') } });
  broken.apply(logIndex(1), put);
  plain.apply(logIndex(1), put);
  assert.notEqual(hashAt(broken, 0).hash, hashAt(plain, 0).hash);
  const got = broken.range({ key: b('k') });
  if (isEtcdError(got)) assert.fail(got.message);
  assert.equal(str(got.kvs[0]?.value ?? b('')), 'w', 'the planted bug changed the last byte');
});

void test("etcd's errors: a compacted revision, a future one", () => {
  const h = new Harness();
  history(h);
  assert.deepEqual(h.m.hashKv(8), ERR_FUTURE_REV);
  ok(h.compact(5), 'compact');
  assert.deepEqual(h.m.hashKv(5), ERR_COMPACTED);
  assert.deepEqual(h.m.hashKv(3), ERR_COMPACTED);
  const after = hashAt(h.m, 6);
  assert.equal(after.compact, 5);
  assert.equal(hashAt(h.m, 0).compact, 5);
});

void test('after the same compaction, the hash agrees whatever came before it', () => {
  // x compacts at 5 with its whole history; y is restored from x's snapshot after that.
  const x = new Harness();
  history(x);
  ok(x.compact(5), 'compact');
  const y = new EtcdMachine();
  y.restore(x.m.snapshot());
  assert.equal(hashAt(y, 0).hash, hashAt(x.m, 0).hash);
  assert.equal(hashAt(y, 6).hash, hashAt(x.m, 6).hash);
  // A member that has not applied the compaction yet hashes differently (etcd then does not
  // compare it: the compact revisions differ).
  const z = new Harness();
  history(z);
  assert.notEqual(hashAt(z.m, 6).hash, hashAt(x.m, 6).hash);
  assert.notEqual(hashAt(z.m, 6).compact, hashAt(x.m, 6).compact);
});

void test('a big store is hashed in several bounded steps', () => {
  const h = new Harness();
  const value = 'v'.repeat(1024);
  for (let i = 0; i < 6000; i++) h.put(`key/${String(i).padStart(5, '0')}`, value);
  const plan = h.m.hashKv(0);
  if (isEtcdError(plan)) assert.fail(plan.message);
  let steps = 1;
  while (!plan.job.step()) steps++;
  assert.ok(steps >= 2, `6 MiB of values took ${steps} step(s)`);
});

const corrupt = (id: bigint): AlarmMember => ({ memberId: id, alarm: 'CORRUPT' });

void test('a CORRUPT alarm, for any member, refuses every write; reads go on; disarm', () => {
  const h = new Harness();
  history(h);
  const raised = h.run({ type: 'alarm', action: 'ACTIVATE', member: corrupt(42n) });
  assert.deepEqual(ok(raised, 'alarm').alarms, [corrupt(42n)]);
  assert.deepEqual(h.m.alarms(), [corrupt(42n)]);
  assert.deepEqual(h.m.alarms('NOSPACE'), []);
  assert.deepEqual(errorOf(h.put('a', '9')), ERR_CORRUPT);
  assert.deepEqual(errorOf(h.del('a')), ERR_CORRUPT);
  assert.deepEqual(errorOf(h.compact(3)), ERR_CORRUPT);
  assert.deepEqual(errorOf(h.grant(8n, 60)), ERR_CORRUPT);
  assert.deepEqual(errorOf(h.revoke(7n)), ERR_CORRUPT);
  assert.deepEqual(
    errorOf(h.txn({ compare: [], success: [], failure: [] })),
    ERR_CORRUPT,
    'every txn that reaches the log',
  );
  assert.deepEqual(h.dump(), ['a=2', 'c=x', 'd=1', 'e=1'], 'reads still served');
  assert.equal(ok(h.run({ type: 'leaseKeepAlive', id: 7n, nowMs: 1 }), 'leaseKeepAlive').id, 7n);
  // Raising it again answers the stored alarm; clearing one that is not raised answers none.
  const again = h.run({ type: 'alarm', action: 'ACTIVATE', member: corrupt(42n) });
  assert.deepEqual(ok(again, 'alarm').alarms, [corrupt(42n)]);
  const none = h.run({ type: 'alarm', action: 'DEACTIVATE', member: corrupt(43n) });
  assert.deepEqual(ok(none, 'alarm').alarms, []);
  const cleared = h.run({ type: 'alarm', action: 'DEACTIVATE', member: corrupt(42n) });
  assert.deepEqual(ok(cleared, 'alarm').alarms, [corrupt(42n)]);
  assert.equal(ok(h.put('a', '9'), 'put').header.revision, 8);
});

void test('a NOSPACE alarm refuses puts and grants, not deletes', () => {
  const h = new Harness();
  history(h);
  h.run({ type: 'alarm', action: 'ACTIVATE', member: { memberId: 1n, alarm: 'NOSPACE' } });
  assert.deepEqual(errorOf(h.put('a', '9')), ERR_NO_SPACE);
  assert.deepEqual(errorOf(h.grant(9n, 60)), ERR_NO_SPACE);
  assert.equal(ok(h.del('a'), 'deleteRange').deleted, 1);
});

void test('alarms survive a snapshot and count in the digest', () => {
  const h = new Harness();
  history(h);
  const before = h.m.digest();
  h.run({ type: 'alarm', action: 'ACTIVATE', member: corrupt(5n) });
  h.run({ type: 'alarm', action: 'ACTIVATE', member: { memberId: 3n, alarm: 'NOSPACE' } });
  assert.notEqual(h.m.digest(), before);
  const r = new EtcdMachine();
  r.restore(h.m.snapshot());
  assert.deepEqual(r.alarms(), [{ memberId: 3n, alarm: 'NOSPACE' }, corrupt(5n)]);
  assert.equal(r.digest(), h.m.digest());
  h.run({ type: 'alarm', action: 'DEACTIVATE', member: corrupt(5n) });
  h.run({ type: 'alarm', action: 'DEACTIVATE', member: { memberId: 3n, alarm: 'NOSPACE' } });
  assert.equal(h.m.digest(), before, 'no alarm: the digest of before');
});
