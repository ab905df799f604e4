// Snapshot and restore (Raft §7): a restored machine has the same digest, answers every read the
// same way, and stays in step with the original under further commands.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Command } from '../../src/core/state/command.js';
import { decodeCommand, encodeCommand } from '../../src/core/state/command.js';
import { b, bigintSafe, Harness, ok, putOp } from './fixtures.js';

function busy(): Harness {
  const h = new Harness();
  ok(h.grant(1n, 30, 500), 'leaseGrant');
  ok(h.grant(0n, 10, 500), 'leaseGrant');
  h.put('a', '1', { lease: 1n });
  h.put('b', '1');
  h.put('a', '2');
  h.del('b');
  h.put('c', '\u00ff\u0000');
  ok(
    h.txn({ compare: [], success: [putOp('d', '1', { lease: 1n }), putOp('e', '1')], failure: [] }),
    'txn',
  );
  ok(h.compact(4), 'compact');
  h.put('b', 'again');
  return h;
}

const reads = (h: Harness): string => {
  const out: unknown[] = [];
  for (let rev = h.m.compactRevision; rev <= h.m.revision; rev++) {
    out.push(h.m.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), revision: rev }));
  }
  out.push(h.m.leaseLeases());
  for (const id of h.m.leaseLeases().leases) out.push(h.m.leaseTimeToLive(id, 1_000, true));
  out.push(h.m.range({ key: b('a'), revision: 3 }));
  return JSON.stringify(out, bigintSafe);
};

void test('restore gives the same digest, the same answers and the same snapshot', () => {
  const h = busy();
  const snap = h.m.snapshot();
  const r = new Harness();
  r.put('junk', 'replaced by the restore');
  r.m.restore(snap);
  assert.equal(r.m.digest(), h.m.digest());
  assert.equal(reads(r), reads(h));
  assert.deepEqual(r.m.snapshot(), snap);
  assert.equal(r.m.appliedIndex, h.m.appliedIndex);
  assert.equal(r.m.compactRevision, 4);
});

void test('after a restore both machines stay in step', () => {
  const h = busy();
  const r = new Harness();
  r.m.restore(h.m.snapshot());
  const next: Command[] = [
    { type: 'put', request: { key: b('f'), value: b('1'), lease: 1n } },
    { type: 'leaseRevoke', id: 1n },
    { type: 'compact', request: { revision: 6 } },
    { type: 'deleteRange', request: { key: b('a'), rangeEnd: b('z') } },
  ];
  for (const c of next) {
    assert.equal(JSON.stringify(r.run(c), bigintSafe), JSON.stringify(h.run(c), bigintSafe));
    assert.equal(r.m.digest(), h.m.digest());
  }
  assert.equal(reads(r), reads(h));
  assert.deepEqual(h.dump(), []);
});

void test('different states have different digests', () => {
  const x = busy();
  const y = busy();
  assert.equal(x.m.digest(), y.m.digest());
  y.put('a', '3');
  assert.notEqual(x.m.digest(), y.m.digest());
  const z = busy();
  ok(z.grant(99n, 5), 'leaseGrant');
  assert.notEqual(x.m.digest(), z.m.digest());
});

void test('commands round-trip through the encoding', () => {
  const cmds: Command[] = [
    {
      type: 'put',
      request: { key: new Uint8Array([0, 255]), value: b('v'), lease: 2n ** 62n, prevKv: true },
    },
    {
      type: 'txn',
      request: {
        compare: [{ key: b('k'), result: 'EQUAL', target: 'LEASE', lease: 5n }],
        success: [{ type: 'empty' }],
        failure: [],
      },
    },
    { type: 'leaseGrant', id: 0n, ttlSeconds: 5, nowMs: 123 },
  ];
  for (const c of cmds) assert.deepEqual(decodeCommand(encodeCommand(c)), c);
  assert.equal(decodeCommand(b('[]')), null);
  assert.equal(decodeCommand(b('null')), null);
});
