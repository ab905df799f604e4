// The lost-writes checker accepts legal histories (unknown puts present or absent, concurrent
// puts in either revision order) and rejects each planted bad history with the right kind: an
// acknowledged put missing, a wrong value, a phantom key, a put applied twice or acknowledged at
// the wrong revision, and revisions that go against real time.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  checkLostWrites,
  type InsertAttempt,
  type LostWriteKind,
  type ReadBack,
  type ReadBackEntry,
} from './lost-writes.js';

/** Put n of client c, called at 10n, acknowledged at 10n + 5 with revision 100 + n. */
const put = (n: number, fields: Partial<InsertAttempt> = {}): InsertAttempt => ({
  client: 0,
  key: `k${n}`,
  value: `v${n}`,
  callMs: 10 * n,
  returnMs: 10 * n + 5,
  ackRevision: 100 + n,
  ...fields,
});
const unknown = (n: number, fields: Partial<InsertAttempt> = {}): InsertAttempt => {
  const { ackRevision: _, ...rest } = put(n, { returnMs: Infinity, ...fields });
  return rest;
};
/** What the read finds of a put applied at `revision`. */
const kvOf = (a: InsertAttempt, revision = a.ackRevision ?? 0): ReadBackEntry => ({
  key: a.key,
  value: a.value,
  createRevision: revision,
  modRevision: revision,
});
const readOf = (kvs: ReadBackEntry[], revision = 1_000): ReadBack => ({
  revision,
  atMs: 10_000,
  kvs,
});
const kinds = (attempts: InsertAttempt[], read: ReadBack): LostWriteKind[] =>
  checkLostWrites(attempts, read).violations.map((v) => v.kind);

void describe('checkLostWrites accepts', () => {
  void it('nothing attempted and nothing read', () => {
    assert.deepEqual(checkLostWrites([], readOf([])), {
      ok: true,
      violations: [],
      acknowledged: 0,
      unknownPresent: 0,
      unknownAbsent: 0,
    });
  });

  void it('every acknowledged put read back', () => {
    const attempts = [put(1), put(2), put(3)];
    const r = checkLostWrites(attempts, readOf(attempts.map((a) => kvOf(a))));
    assert.equal(r.ok, true);
    assert.equal(r.acknowledged, 3);
  });

  void it('unknown puts applied or not, the applied one at a later revision', () => {
    const attempts = [put(1), unknown(2), unknown(3), put(4)];
    const read = readOf([kvOf(put(1)), kvOf(unknown(3), 107), kvOf(put(4))]);
    const r = checkLostWrites(attempts, read);
    assert.deepEqual(r.violations, []);
    assert.equal(r.unknownPresent, 1);
    assert.equal(r.unknownAbsent, 1);
  });

  void it('concurrent puts with revisions in either order', () => {
    // Both called before either returned: any revision order is linearizable.
    const attempts = [
      put(1, { callMs: 0, returnMs: 20, ackRevision: 102 }),
      put(2, { callMs: 1, returnMs: 10, ackRevision: 101 }),
    ];
    assert.deepEqual(kinds(attempts, readOf(attempts.map((a) => kvOf(a)))), []);
  });
});

void describe('checkLostWrites rejects', () => {
  void it('an acknowledged put that is not read back, naming its key and ack time', () => {
    const attempts = [put(1), put(2)];
    const r = checkLostWrites(attempts, readOf([kvOf(put(1))]));
    assert.equal(r.ok, false);
    assert.equal(r.violations.length, 1);
    const v = r.violations[0];
    assert.equal(v?.kind, 'lost');
    assert.equal(v?.key, 'k2');
    assert.equal(v?.atMs, 25);
    assert.match(v?.message ?? '', /k2.*revision 102/);
  });

  void it('every acknowledged put lost after a kill-all that kept only the old ones', () => {
    const attempts = Array.from({ length: 10 }, (_, i) => put(i + 1));
    const kept = attempts.slice(0, 4).map((a) => kvOf(a));
    assert.deepEqual(kinds(attempts, readOf(kept)), Array(6).fill('lost'));
  });

  void it('a key read back with another value', () => {
    const attempts = [put(1)];
    assert.deepEqual(kinds(attempts, readOf([{ ...kvOf(put(1)), value: 'other' }])), ['value']);
  });

  void it('a key never attempted', () => {
    const read = readOf([kvOf(put(1)), kvOf(put(9))]);
    const r = checkLostWrites([put(1)], read);
    assert.deepEqual(
      r.violations.map((v) => [v.kind, v.key, v.atMs]),
      [['phantom', 'k9', 10_000]],
    );
  });

  void it('a put applied twice (an unknown one retried)', () => {
    const read = readOf([{ ...kvOf(unknown(1), 101), modRevision: 104 }]);
    assert.deepEqual(kinds([unknown(1)], read), ['revision']);
  });

  void it('an acknowledged put whose key has another revision', () => {
    assert.deepEqual(kinds([put(1)], readOf([kvOf(put(1), 150)])), ['revision']);
  });

  void it('two acknowledged puts at one revision', () => {
    const attempts = [put(1), put(2, { ackRevision: 101 })];
    const read = readOf([kvOf(put(1)), { ...kvOf(put(2)), createRevision: 101, modRevision: 101 }]);
    assert.ok(kinds(attempts, read).includes('revision'));
  });

  void it('a key newer than the read', () => {
    const attempts = [put(1)];
    assert.deepEqual(kinds(attempts, readOf([kvOf(put(1))], 50)), ['revision']);
  });

  void it('a put called after another was acknowledged, at a lower revision', () => {
    // k2 was called at 20, after k1 returned at 15 with revision 101: 100 is in the past.
    const attempts = [put(1), put(2, { ackRevision: 100 })];
    const r = checkLostWrites(attempts, readOf(attempts.map((a) => kvOf(a))));
    assert.deepEqual(
      r.violations.map((v) => [v.kind, v.key]),
      [['order', 'k2']],
    );
  });

  void it('an unknown put applied at a revision before one acknowledged before its call', () => {
    const attempts = [put(1), unknown(2)];
    const read = readOf([kvOf(put(1)), kvOf(unknown(2), 99)]);
    assert.deepEqual(kinds(attempts, read), ['order']);
  });
});
