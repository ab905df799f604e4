// Put and DeleteRange (etcd's server/storage/mvcc/kvstore_txn.go, storeTxnWrite.put and
// deleteRange; checkPutRequest in server/etcdserver/api/v3rpc/key.go): revision and version
// arithmetic across put, delete and re-create; put options; prev_kv; every Put/DeleteRange error
// string.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { DEFAULT_ETCD_LIMITS } from '../../src/core/state/etcd-limits.js';
import { ERR_MALFORMED_COMMAND } from '../../src/core/state/etcd-machine.js';
import type { RequestOp } from '../../src/core/state/kv-types.js';
import { b, errorOf, Harness, ok, view } from './fixtures.js';

void test('an empty store is at revision 1; each put bumps it once', () => {
  const h = new Harness();
  assert.equal(h.m.revision, 1);
  assert.equal(ok(h.put('a', '1'), 'put').header.revision, 2);
  assert.equal(ok(h.put('b', '1'), 'put').header.revision, 3);
  assert.equal(ok(h.put('a', '2'), 'put').header.revision, 4);
  assert.deepEqual(view(h.range({ key: b('a') }).kvs[0]!), {
    k: 'a',
    v: '2',
    c: 2,
    m: 4,
    ver: 2,
    lease: 0n,
  });
});

void test('delete resets version; re-create gets a new create_revision', () => {
  const h = new Harness();
  h.put('k', 'v1'); // 2
  h.put('k', 'v2'); // 3
  const d = ok(h.del('k', undefined, true), 'deleteRange');
  assert.equal(d.header.revision, 4);
  assert.equal(d.deleted, 1);
  assert.deepEqual(d.prevKvs.map(view), [{ k: 'k', v: 'v2', c: 2, m: 3, ver: 2, lease: 0n }]);
  assert.equal(h.range({ key: b('k') }).count, 0);
  h.put('k', 'v3'); // 5
  assert.deepEqual(view(h.range({ key: b('k') }).kvs[0]!), {
    k: 'k',
    v: 'v3',
    c: 5,
    m: 5,
    ver: 1,
    lease: 0n,
  });
  // The old generation is still readable at its revisions.
  assert.equal(str0(h.range({ key: b('k'), revision: 3 })), 'v2');
  assert.equal(h.range({ key: b('k'), revision: 4 }).count, 0);
});

const str0 = (r: { kvs: readonly { value: Uint8Array }[] }) =>
  new TextDecoder().decode(r.kvs[0]?.value ?? new Uint8Array());

void test('a delete that matches nothing does not bump the revision', () => {
  const h = new Harness();
  h.put('a', '1');
  const d = ok(h.del('zzz'), 'deleteRange');
  assert.equal(d.deleted, 0);
  assert.equal(d.header.revision, 2);
  assert.equal(h.m.revision, 2);
});

void test('delete of a range deletes every key in one revision; prev_kvs only when asked', () => {
  const h = new Harness();
  for (const k of ['a', 'b', 'c', 'd']) h.put(k, k);
  const d = ok(h.del('b', 'd'), 'deleteRange');
  assert.equal(d.deleted, 2);
  assert.equal(d.prevKvs.length, 0);
  assert.equal(d.header.revision, 6);
  assert.deepEqual(h.dump(), ['a=a', 'd=d']);
  const all = ok(h.del('\0', '\0', true), 'deleteRange');
  assert.deepEqual(
    all.prevKvs.map((kv) => view(kv).k),
    ['a', 'd'],
  );
  assert.equal(all.header.revision, 7);
});

void test('put prev_kv is returned only when the key existed', () => {
  const h = new Harness();
  const first = ok(h.put('a', '1', { prevKv: true }), 'put');
  assert.equal(first.prevKv, undefined);
  const second = ok(h.put('a', '2', { prevKv: true }), 'put');
  assert.deepEqual(view(second.prevKv!), { k: 'a', v: '1', c: 2, m: 2, ver: 1, lease: 0n });
  assert.equal(ok(h.put('a', '3'), 'put').prevKv, undefined);
});

void test('ignore_value keeps the value; ignore_lease keeps the lease', () => {
  const h = new Harness();
  ok(h.grant(7n, 10), 'leaseGrant');
  h.put('a', 'keep', { lease: 7n });
  ok(h.put('a', '', { ignoreValue: true }), 'put');
  assert.deepEqual(view(h.range({ key: b('a') }).kvs[0]!), {
    k: 'a',
    v: 'keep',
    c: 2,
    m: 3,
    ver: 2,
    lease: 0n,
  });
  h.put('a', 'x', { lease: 7n });
  ok(h.put('a', 'y', { ignoreLease: true }), 'put');
  const kv = view(h.range({ key: b('a') }).kvs[0]!);
  assert.equal(kv.v, 'y');
  assert.equal(kv.lease, 7n);
});

void test('Put errors carry the exact codes and messages', () => {
  const h = new Harness();
  h.put('exists', 'v');
  const cases: [string, ReturnType<Harness['put']>, string, string][] = [
    ['empty key', h.put('', 'v'), 'InvalidArgument', 'etcdserver: key is not provided'],
    [
      'ignore_value with a value',
      h.put('exists', 'v', { ignoreValue: true }),
      'InvalidArgument',
      'etcdserver: value is provided',
    ],
    [
      'ignore_lease with a lease',
      h.put('exists', 'v', { ignoreLease: true, lease: 5n }),
      'InvalidArgument',
      'etcdserver: lease is provided',
    ],
    [
      'unknown lease',
      h.put('k', 'v', { lease: 99n }),
      'NotFound',
      'etcdserver: requested lease not found',
    ],
    [
      'ignore_value on a missing key',
      h.put('missing', '', { ignoreValue: true }),
      'InvalidArgument',
      'etcdserver: key not found',
    ],
    [
      'ignore_lease on a missing key',
      h.put('missing', 'v', { ignoreLease: true }),
      'InvalidArgument',
      'etcdserver: key not found',
    ],
  ];
  for (const [name, r, code, message] of cases) {
    assert.deepEqual({ ...errorOf(r) }, { code, message }, name);
  }
  assert.equal(h.m.revision, 2, 'failed puts do not bump the revision');
});

void test('DeleteRange with an empty key fails', () => {
  const h = new Harness();
  assert.deepEqual(
    { ...errorOf(h.del('')) },
    { code: 'InvalidArgument', message: 'etcdserver: key is not provided' },
  );
});

void test('a no-op entry and malformed entries', () => {
  const h = new Harness();
  assert.deepEqual(h.m.apply(logIndex(1), new Uint8Array()), { type: 'noop' });
  assert.deepEqual(errorOf(h.m.apply(logIndex(2), b('{nope'))), ERR_MALFORMED_COMMAND);
  assert.deepEqual(errorOf(h.m.apply(logIndex(3), b('{"type":"frob"}'))), ERR_MALFORMED_COMMAND);
  assert.equal(h.m.appliedIndex, 3);
  assert.equal(h.m.revision, 1);
});

void test('binary keys and values with every byte', () => {
  const h = new Harness();
  const key = new Uint8Array([0xff, 0x00, 0x80, 0x01]);
  const value = new Uint8Array(256).map((_, i) => 255 - i);
  ok(h.run({ type: 'put', request: { key, value } }), 'put');
  const kv = h.range({ key }).kvs[0]!;
  assert.deepEqual(kv.key, key);
  assert.deepEqual(kv.value, value);
});

const NO_SPACE = {
  code: 'ResourceExhausted',
  message: 'etcdserver: mvcc: database space exceeded',
};

void test('the space quota applies to puts, writing txns and grants only', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, backendBytesMax: 0 });
  assert.deepEqual({ ...errorOf(h.put('k', '')) }, NO_SPACE);
  assert.deepEqual({ ...errorOf(h.grant(2n, 10)) }, NO_SPACE);
  const put = { type: 'put' as const, request: { key: b('t'), value: b('') } };
  const del = { type: 'deleteRange' as const, request: { key: b('t') } };
  const get = { type: 'range' as const, request: { key: b('k0') } };
  const txn = (success: RequestOp[]) => h.txn({ compare: [], success, failure: [] });
  assert.deepEqual({ ...errorOf(txn([get, put])) }, NO_SPACE);
  assert.deepEqual({ ...errorOf(txn([del])) }, NO_SPACE, 'a txn that deletes is a write txn');
  ok(txn([get]), 'txn');
  ok(h.del('k'), 'deleteRange');
  ok(h.compact(1), 'compact');
});

void test('deletes alone do not free space; compaction does', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, backendBytesMax: 600 });
  ok(h.grant(1n, 60), 'leaseGrant');
  ok(h.put('leased', 'x', { lease: 1n }), 'put');
  let i = 0;
  while (h.put(`k${i}`, 'x'.repeat(20)).type === 'put') i++;
  assert.ok(i > 2);
  const again = () => h.put(`k${i}`, 'x'.repeat(20));
  assert.deepEqual({ ...errorOf(again()) }, NO_SPACE);
  ok(h.del('k', 'l'), 'deleteRange');
  assert.deepEqual({ ...errorOf(again()) }, NO_SPACE, 'tombstones count too');
  ok(h.revoke(1n), 'leaseRevoke');
  ok(h.compact(h.m.revision), 'compact');
  ok(again(), 'put');
});
