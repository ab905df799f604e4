// Key-range conventions (RangeRequest.range_end in etcd's api/etcdserverpb/rpc.proto; the prefix
// rule is getPrefix in client/v3/op.go): single key, from-key, intervals, the prefix rule and
// bytewise order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  compareBytes,
  fromByteKey,
  keySpan,
  prefixEnd,
  spanContains,
  spanIsEmpty,
  toByteKey,
} from '../../src/core/state/key-range.js';
import { b } from './fixtures.js';

void test('byte keys round-trip every byte value and order bytewise', () => {
  const all = new Uint8Array(256).map((_, i) => i);
  assert.deepEqual(fromByteKey(toByteKey(all)), all);
  const pairs: [number[], number[]][] = [
    [[0x7f], [0x80]],
    [[0x01], [0x01, 0x00]],
    [[0xfe, 0xff], [0xff]],
  ];
  for (const [x, y] of pairs) {
    assert.ok(compareBytes(new Uint8Array(x), new Uint8Array(y)) < 0);
    assert.ok(toByteKey(new Uint8Array(x)) < toByteKey(new Uint8Array(y)));
  }
});

void test('prefixEnd follows the client getPrefix rule', () => {
  const cases: [number[], number[]][] = [
    [[0x61], [0x62]],
    [[0x61, 0xff], [0x62]],
    [
      [0x61, 0x62, 0xff, 0xff],
      [0x61, 0x63],
    ],
    [[0xff, 0xff], [0x00]],
    [[], [0x00]],
  ];
  for (const [p, end] of cases) assert.deepEqual([...prefixEnd(new Uint8Array(p))], end);
});

void test('spans: single, from-key, interval, empty interval', () => {
  const single = keySpan(b('a'), undefined);
  assert.ok(spanContains(single, 'a') && !spanContains(single, 'ab'));
  assert.deepEqual(keySpan(b('a'), new Uint8Array(0)), single);
  const from = keySpan(b('b'), new Uint8Array([0]));
  assert.equal(from.kind, 'from');
  assert.ok(spanContains(from, 'b') && spanContains(from, '\xff') && !spanContains(from, 'a'));
  const all = keySpan(new Uint8Array([0]), new Uint8Array([0]));
  assert.ok(spanContains(all, 'a') && spanContains(all, '\0'));
  const iv = keySpan(b('b'), b('d'));
  assert.ok(spanContains(iv, 'b') && spanContains(iv, 'cz') && !spanContains(iv, 'd'));
  assert.ok(spanIsEmpty(keySpan(b('d'), b('b'))));
  assert.ok(spanIsEmpty(keySpan(b('d'), b('d'))));
  assert.ok(!spanIsEmpty(iv));
});
