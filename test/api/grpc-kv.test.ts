// KV over gRPC against a MemoryBackend (etcd's server/etcdserver/api/v3rpc/key.go): values,
// headers and etcd's exact error codes and texts (api/v3rpc/rpctypes/error.go).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { Fixture, Obj } from './api-fixture.js';
import { b, startFixture, text } from './api-fixture.js';

let f: Fixture;
before(async () => {
  f = await startFixture();
});
after(() => f.close());

const KV = '/etcdserverpb.KV';
const header = (r: Obj): Obj => r['header'] as Obj;
const kvs = (r: Obj): Obj[] => r['kvs'] as Obj[];

test('Put then Range returns the value with revisions and the header identity', async () => {
  const put = await f.client.ok(`${KV}/Put`, { key: b('k1'), value: b('v1') });
  assert.equal(header(put)['revision'], '2');
  assert.equal(header(put)['cluster_id'], '4096');
  assert.equal(header(put)['member_id'], '1');
  assert.equal(header(put)['raft_term'], '1');
  const got = await f.client.ok(`${KV}/Range`, { key: b('k1') });
  assert.equal(got['count'], '1');
  const kv = kvs(got)[0];
  assert.ok(kv);
  assert.equal(text(kv['key']), 'k1');
  assert.equal(text(kv['value']), 'v1');
  assert.equal(kv['create_revision'], '2');
  assert.equal(kv['version'], '1');
  const serial = await f.client.ok(`${KV}/Range`, { key: b('k1'), serializable: true });
  assert.equal(text(kvs(serial)[0]?.['value']), 'v1');
});

test('Put with prev_kv returns the previous value; prefix Range sorts and limits', async () => {
  await f.client.ok(`${KV}/Put`, { key: b('p/a'), value: b('1') });
  await f.client.ok(`${KV}/Put`, { key: b('p/b'), value: b('2') });
  const put = await f.client.ok(`${KV}/Put`, { key: b('p/a'), value: b('3'), prev_kv: true });
  assert.equal(text((put['prev_kv'] as Obj)['value']), '1');
  const got = await f.client.ok(`${KV}/Range`, {
    key: b('p/'),
    range_end: b('p0'),
    sort_order: 'DESCEND',
    limit: 1,
  });
  assert.equal(got['count'], '2');
  assert.equal(got['more'], true);
  assert.deepEqual(
    kvs(got).map((kv) => text(kv['key'])),
    ['p/b'],
  );
});

test('DeleteRange deletes and returns prev_kvs', async () => {
  await f.client.ok(`${KV}/Put`, { key: b('d1'), value: b('x') });
  const del = await f.client.ok(`${KV}/DeleteRange`, { key: b('d1'), prev_kv: true });
  assert.equal(del['deleted'], '1');
  assert.equal(text((del['prev_kvs'] as Obj[])[0]?.['value']), 'x');
  const none = await f.client.ok(`${KV}/DeleteRange`, { key: b('d1') });
  assert.equal(none['deleted'], '0');
});

test('Txn: compare on create_revision, then put and range in the success branch', async () => {
  const txn = await f.client.ok(`${KV}/Txn`, {
    compare: [{ key: b('t1'), target: 'CREATE', result: 'EQUAL', create_revision: 0 }],
    success: [
      { request_put: { key: b('t1'), value: b('first') } },
      { request_range: { key: b('t1') } },
    ],
    failure: [{ request_range: { key: b('t1') } }],
  });
  assert.equal(txn['succeeded'], true);
  const responses = txn['responses'] as Obj[];
  assert.equal(responses[0]?.['response'], 'response_put');
  const range = responses[1]?.['response_range'] as Obj;
  assert.equal(text(kvs(range)[0]?.['value']), 'first');
  const again = await f.client.ok(`${KV}/Txn`, {
    compare: [{ key: b('t1'), target: 'CREATE', result: 'EQUAL', create_revision: 0 }],
    success: [{ request_put: { key: b('t1'), value: b('second') } }],
    failure: [{ request_range: { key: b('t1') } }],
  });
  assert.equal(again['succeeded'], false);
  const read = (again['responses'] as Obj[])[0]?.['response_range'] as Obj;
  assert.equal(text(kvs(read)[0]?.['value']), 'first');
  const nested = await f.client.ok(`${KV}/Txn`, {
    success: [{ request_txn: { success: [{ request_range: { key: b('t1') } }] } }],
  });
  assert.equal(nested['succeeded'], true);
});

test('Compact, then a Range below it is compacted and one above is a future revision', async () => {
  const put = await f.client.ok(`${KV}/Put`, { key: b('c1'), value: b('x') });
  const rev = Number(header(put)['revision']);
  await f.client.ok(`${KV}/Compact`, { revision: rev });
  const low = await f.client.unary(`${KV}/Range`, { key: b('c1'), revision: rev - 1 });
  assert.deepEqual(low.error, {
    code: status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision has been compacted',
  });
  const high = await f.client.unary(`${KV}/Range`, { key: b('c1'), revision: rev + 100 });
  assert.deepEqual(high.error, {
    code: status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision is a future revision',
  });
  const again = await f.client.unary(`${KV}/Compact`, { revision: rev });
  assert.equal(again.error?.code, status.OUT_OF_RANGE);
});

test('errors carry etcd codes and texts byte for byte', async () => {
  const cases: [string, object, number, string][] = [
    [`${KV}/Range`, { key: b('') }, status.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
    [
      `${KV}/Put`,
      { key: b(''), value: b('v') },
      status.INVALID_ARGUMENT,
      'etcdserver: key is not provided',
    ],
    [
      `${KV}/Put`,
      { key: b('x'), value: b('v'), lease: 12345 },
      status.NOT_FOUND,
      'etcdserver: requested lease not found',
    ],
    [
      `${KV}/Put`,
      { key: b('missing'), ignore_value: true },
      status.INVALID_ARGUMENT,
      'etcdserver: key not found',
    ],
    [
      `${KV}/Put`,
      { key: b('x'), value: b('v'), ignore_value: true },
      status.INVALID_ARGUMENT,
      'etcdserver: value is provided',
    ],
    [`${KV}/Txn`, { success: [{}] }, status.INVALID_ARGUMENT, 'etcdserver: key not found'],
    [
      `${KV}/Txn`,
      {
        success: [
          { request_put: { key: b('dup'), value: b('1') } },
          { request_put: { key: b('dup'), value: b('2') } },
        ],
      },
      status.INVALID_ARGUMENT,
      'etcdserver: duplicate key given in txn request',
    ],
    [
      `${KV}/Txn`,
      { success: Array.from({ length: 129 }, () => ({ request_range: { key: b('r') } })) },
      status.INVALID_ARGUMENT,
      'etcdserver: too many operations in txn request',
    ],
  ];
  for (const [path, req, code, details] of cases) {
    const r = await f.client.unary(path, req);
    assert.deepEqual(r.error, { code, details }, `${path} ${JSON.stringify(req)}`);
  }
});

test('an undeclared sort enum value is ErrGRPCInvalidSortOption', async () => {
  // proto-loader encodes a number for an enum field as is, like a newer client would.
  const r = await f.client.unary(`${KV}/Range`, { key: b('k'), sort_target: 9 });
  assert.deepEqual(r.error, {
    code: status.INVALID_ARGUMENT,
    details: 'etcdserver: invalid sort option',
  });
});

test("a request over max-request-bytes is refused with etcd's text", async () => {
  const big = Buffer.alloc(1.5 * 1024 * 1024 + 10, 0x61);
  const r = await f.client.unary(`${KV}/Put`, { key: b('big'), value: big });
  assert.deepEqual(r.error, {
    code: status.INVALID_ARGUMENT,
    details: 'etcdserver: request is too large',
  });
  // Beyond the gRPC receive limit (limit + 512 KiB) gRPC itself refuses the message.
  const huge = Buffer.alloc(2.5 * 1024 * 1024, 0x61);
  const r2 = await f.client.unary(`${KV}/Put`, { key: b('big'), value: huge });
  assert.equal(r2.error?.code, status.RESOURCE_EXHAUSTED);
  const still = await f.client.ok(`${KV}/Range`, { key: b('k1') });
  assert.ok(still['header']);
});
