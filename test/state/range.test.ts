// KV.Range with every option (etcd's server/etcdserver/txn/range.go): limit/more/count, past
// revisions and their errors, sort orders and targets, count_only, keys_only, min/max revision
// filters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RangeRequest, SortOrder, SortTarget } from '../../src/core/state/kv-types.js';
import { b, Harness, ok, str } from './fixtures.js';

/** a@2 b@3 c@4, then a again @5 (a: create 2, mod 5, version 2), d@6 with value "0". */
function seeded(): Harness {
  const h = new Harness();
  h.put('a', '3');
  h.put('b', '2');
  h.put('c', '1');
  h.put('a', '4');
  h.put('d', '0');
  return h;
}

const keys = (h: Harness, req: Partial<RangeRequest>): string =>
  h
    .range({ key: b('a'), rangeEnd: b('z'), ...req })
    .kvs.map((kv) => str(kv.key))
    .join('');

void test('single key, interval, from-key, all keys', () => {
  const h = seeded();
  assert.equal(h.range({ key: b('b') }).count, 1);
  assert.equal(keys(h, {}), 'abcd');
  assert.equal(keys(h, { key: b('b'), rangeEnd: b('d') }), 'bc');
  assert.equal(keys(h, { key: b('c'), rangeEnd: new Uint8Array([0]) }), 'cd');
  assert.equal(keys(h, { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) }), 'abcd');
  assert.equal(h.range({ key: b('zz') }).count, 0);
  assert.equal(h.range({ key: b('d'), rangeEnd: b('a') }).count, 0);
});

void test('limit cuts the result, sets more, and leaves count whole', () => {
  const h = seeded();
  const r = h.range({ key: b('a'), rangeEnd: b('z'), limit: 2 });
  assert.deepEqual(
    r.kvs.map((kv) => str(kv.key)),
    ['a', 'b'],
  );
  assert.equal(r.more, true);
  assert.equal(r.count, 4);
  const exact = h.range({ key: b('a'), rangeEnd: b('z'), limit: 4 });
  assert.equal(exact.more, false);
  assert.equal(exact.kvs.length, 4);
});

void test('the header carries the current revision even for a past read', () => {
  const h = seeded();
  const r = h.range({ key: b('a'), revision: 2 });
  assert.equal(r.header.revision, 6);
  assert.equal(str(r.kvs[0]!.value), '3');
  assert.equal(r.kvs[0]!.version, 1);
  assert.equal(keys(h, { revision: 3 }), 'ab');
  assert.equal(keys(h, { revision: 1 }), '');
  assert.equal(keys(h, { revision: 6 }), 'abcd');
  assert.equal(keys(h, { revision: -5 }), 'abcd');
});

void test('future and compacted revisions fail with the exact errors', () => {
  const h = seeded();
  assert.deepEqual(
    { ...h.rangeError({ key: b('a'), revision: 7 }) },
    { code: 'OutOfRange', message: 'etcdserver: mvcc: required revision is a future revision' },
  );
  ok(h.compact(4), 'compact');
  assert.deepEqual(
    { ...h.rangeError({ key: b('a'), revision: 3 }) },
    { code: 'OutOfRange', message: 'etcdserver: mvcc: required revision has been compacted' },
  );
  assert.equal(keys(h, { revision: 4 }), 'abc', 'reading at the compact revision is allowed');
});

void test('empty key and invalid sort options fail', () => {
  const h = seeded();
  assert.deepEqual(
    { ...h.rangeError({ key: new Uint8Array() }) },
    { code: 'InvalidArgument', message: 'etcdserver: key is not provided' },
  );
  const badOrder = { key: b('a'), sortOrder: 'SIDEWAYS' as SortOrder };
  assert.deepEqual(
    { ...h.rangeError(badOrder) },
    { code: 'InvalidArgument', message: 'etcdserver: invalid sort option' },
  );
  const badTarget = { key: b('a'), sortTarget: 'COLOUR' as SortTarget };
  assert.equal(h.rangeError(badTarget).message, 'etcdserver: invalid sort option');
});

void test('sort orders and targets', () => {
  const h = seeded();
  const table: [SortOrder, SortTarget, string][] = [
    ['NONE', 'KEY', 'abcd'],
    ['ASCEND', 'KEY', 'abcd'],
    ['DESCEND', 'KEY', 'dcba'],
    ['DESCEND', 'MOD', 'dacb'],
    ['ASCEND', 'MOD', 'bcad'],
    ['NONE', 'MOD', 'bcad'], // NONE with a target other than KEY means ASCEND
    ['ASCEND', 'CREATE', 'abcd'],
    ['DESCEND', 'CREATE', 'dcba'],
    ['ASCEND', 'VALUE', 'dcba'],
    ['DESCEND', 'VALUE', 'abcd'],
    ['DESCEND', 'VERSION', 'abcd'], // a has version 2; ties stay in key order
    ['ASCEND', 'VERSION', 'bcda'],
  ];
  for (const [sortOrder, sortTarget, want] of table) {
    assert.equal(keys(h, { sortOrder, sortTarget }), want, `${sortOrder} ${sortTarget}`);
  }
  // With sorting the limit applies after the sort.
  const r = h.range({
    key: b('a'),
    rangeEnd: b('z'),
    sortOrder: 'DESCEND',
    sortTarget: 'KEY',
    limit: 1,
  });
  assert.equal(str(r.kvs[0]!.key), 'd');
  assert.equal(r.more, true);
  assert.equal(r.count, 4);
});

void test('count_only and keys_only', () => {
  const h = seeded();
  const c = h.range({ key: b('a'), rangeEnd: b('z'), countOnly: true });
  assert.deepEqual([c.kvs.length, c.count, c.more], [0, 4, false]);
  const k = h.range({ key: b('a'), rangeEnd: b('z'), keysOnly: true });
  assert.equal(k.kvs.length, 4);
  assert.ok(k.kvs.every((kv) => kv.value.length === 0 && kv.modRevision > 0));
});

void test('min/max mod and create revision filters; count ignores them', () => {
  const h = seeded();
  assert.equal(keys(h, { minModRevision: 4 }), 'acd');
  assert.equal(keys(h, { maxModRevision: 4 }), 'bc');
  assert.equal(keys(h, { minModRevision: 3, maxModRevision: 4 }), 'bc');
  assert.equal(keys(h, { minCreateRevision: 3 }), 'bcd');
  assert.equal(keys(h, { maxCreateRevision: 3 }), 'ab');
  assert.equal(keys(h, { minCreateRevision: 3, maxCreateRevision: 4 }), 'bc');
  const r = h.range({ key: b('a'), rangeEnd: b('z'), minModRevision: 4, limit: 2 });
  assert.deepEqual(
    r.kvs.map((kv) => str(kv.key)),
    ['a', 'c'],
  );
  assert.equal(r.more, true);
  assert.equal(r.count, 4);
  const noMore = h.range({ key: b('a'), rangeEnd: b('z'), minModRevision: 5, limit: 2 });
  assert.equal(noMore.more, false);
});
