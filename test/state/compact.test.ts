// KV.Compact (etcd's server/storage/mvcc/kvstore.go, store.Compact and updateCompactRev): its
// errors, what stays readable, and that history above the compact revision is untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { b, errorOf, Harness, ok } from './fixtures.js';

const COMPACTED = {
  code: 'OutOfRange',
  message: 'etcdserver: mvcc: required revision has been compacted',
};
const FUTURE = {
  code: 'OutOfRange',
  message: 'etcdserver: mvcc: required revision is a future revision',
};

void test('compact errors: at or below the compact revision, or in the future', () => {
  const h = new Harness();
  h.put('a', '1'); // 2
  h.put('a', '2'); // 3
  assert.deepEqual({ ...errorOf(h.compact(4)) }, FUTURE);
  const r = ok(h.compact(2), 'compact');
  assert.equal(r.header.revision, 3);
  assert.equal(h.m.compactRevision, 2);
  assert.deepEqual({ ...errorOf(h.compact(2)) }, COMPACTED);
  assert.deepEqual({ ...errorOf(h.compact(1)) }, COMPACTED);
  ok(h.compact(3), 'compact');
  assert.equal(h.m.revision, 3, 'compaction does not bump the revision');
});

void test('after compaction the latest version of every live key remains', () => {
  const h = new Harness();
  h.put('a', '1'); // 2
  h.put('b', '1'); // 3
  h.put('a', '2'); // 4
  h.del('b'); // 5
  h.put('c', '1'); // 6
  h.put('a', '3'); // 7
  ok(h.compact(6), 'compact');
  assert.deepEqual(h.dump('', 6), ['a=2', 'c=1']);
  assert.deepEqual(h.dump('', 7), ['a=3', 'c=1']);
  assert.deepEqual(h.dump(), ['a=3', 'c=1']);
  assert.equal(h.range({ key: b('a') }).kvs[0]!.version, 3, 'versions survive compaction');
  assert.equal(h.range({ key: b('a') }).kvs[0]!.createRevision, 2);
  assert.deepEqual({ ...h.rangeError({ key: b('a'), revision: 5 }) }, COMPACTED);
  // A deleted key's tombstone below the compact revision is gone; re-creating starts afresh.
  h.put('b', 'again'); // 8
  const kv = h.range({ key: b('b') }).kvs[0]!;
  assert.deepEqual([kv.createRevision, kv.version], [8, 1]);
});

void test('compacting at the current revision keeps the current state readable', () => {
  const h = new Harness();
  h.put('a', '1');
  h.put('a', '2');
  h.del('a');
  h.put('b', '1');
  ok(h.compact(h.m.revision), 'compact');
  assert.deepEqual(h.dump('', h.m.revision), ['b=1']);
});
