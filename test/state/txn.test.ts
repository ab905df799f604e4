// KV.Txn (etcd's server/etcdserver/txn/txn.go; validation: checkTxnRequest and checkIntervals in
// server/etcdserver/api/v3rpc/key.go): compare targets and results over keys and ranges, absent
// keys, one revision per txn with reads seeing earlier writes, nested txns, and every validation
// error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  Compare,
  CompareOperand,
  CompareResult,
  RequestOp,
  TxnRequest,
} from '../../src/core/state/kv-types.js';
import { b, delOp, errorOf, getOp, Harness, ok, putOp, str, view } from './fixtures.js';

type CompareBody = { readonly result: CompareResult } & CompareOperand;

const cmp = (key: string, body: CompareBody, rangeEnd?: string): Compare =>
  rangeEnd === undefined
    ? { key: b(key), ...body }
    : { key: b(key), rangeEnd: b(rangeEnd), ...body };

const txn = (compare: Compare[], success: RequestOp[], failure: RequestOp[] = []): TxnRequest => ({
  compare,
  success,
  failure,
});

/** k@2 (lease 5), k@3, j@4: k create 2 mod 3 version 2 value "v2" lease 0; j value "x". */
function seeded(): Harness {
  const h = new Harness();
  ok(h.grant(5n, 60), 'leaseGrant');
  h.put('k', 'v1', { lease: 5n });
  h.put('k', 'v2', { lease: 5n });
  h.put('j', 'x');
  return h;
}

void test('compare targets and results on one key', () => {
  const h = seeded();
  const table: [CompareBody, boolean][] = [
    [{ target: 'VERSION', result: 'EQUAL', version: 2 }, true],
    [{ target: 'VERSION', result: 'GREATER', version: 1 }, true],
    [{ target: 'VERSION', result: 'LESS', version: 2 }, false],
    [{ target: 'VERSION', result: 'NOT_EQUAL', version: 2 }, false],
    [{ target: 'CREATE', result: 'EQUAL', createRevision: 2 }, true],
    [{ target: 'CREATE', result: 'LESS', createRevision: 3 }, true],
    [{ target: 'MOD', result: 'EQUAL', modRevision: 3 }, true],
    [{ target: 'MOD', result: 'GREATER', modRevision: 3 }, false],
    [{ target: 'VALUE', result: 'EQUAL', value: b('v2') }, true],
    [{ target: 'VALUE', result: 'GREATER', value: b('v1') }, true],
    [{ target: 'VALUE', result: 'LESS', value: b('v3') }, true],
    [{ target: 'VALUE', result: 'NOT_EQUAL', value: b('v2') }, false],
    [{ target: 'LEASE', result: 'EQUAL', lease: 5n }, true],
    [{ target: 'LEASE', result: 'NOT_EQUAL', lease: 0n }, true],
    [{ target: 'LEASE', result: 'GREATER', lease: 4n }, true],
  ];
  for (const [body, want] of table) {
    const r = ok(h.txn(txn([cmp('k', body)], [])), 'txn');
    assert.equal(
      r.succeeded,
      want,
      JSON.stringify(body, (_k, v: unknown) => String(v)),
    );
  }
  assert.equal(h.m.revision, 4, 'read-only txns do not bump the revision');
});

void test('absent keys: VALUE compares are false, others compare with zero', () => {
  const h = seeded();
  const table: [CompareBody, boolean][] = [
    [{ target: 'CREATE', result: 'EQUAL', createRevision: 0 }, true],
    [{ target: 'VERSION', result: 'EQUAL', version: 0 }, true],
    [{ target: 'MOD', result: 'EQUAL', modRevision: 0 }, true],
    [{ target: 'LEASE', result: 'EQUAL', lease: 0n }, true],
    [{ target: 'VALUE', result: 'EQUAL', value: b('') }, false],
    [{ target: 'VALUE', result: 'NOT_EQUAL', value: b('x') }, false],
  ];
  for (const [body, want] of table) {
    assert.equal(ok(h.txn(txn([cmp('nope', body)], [])), 'txn').succeeded, want);
  }
});

void test('a compare over a range must hold for every key in it', () => {
  const h = seeded();
  const all = (body: CompareBody) => ok(h.txn(txn([cmp('a', body, 'z')], [])), 'txn').succeeded;
  assert.equal(all({ target: 'CREATE', result: 'GREATER', createRevision: 1 }), true);
  assert.equal(all({ target: 'CREATE', result: 'GREATER', createRevision: 2 }), false);
  assert.equal(all({ target: 'VALUE', result: 'NOT_EQUAL', value: b('zz') }), true);
  assert.equal(all({ target: 'VERSION', result: 'EQUAL', version: 2 }), false);
  const empty = ok(
    h.txn(txn([cmp('p', { target: 'VALUE', result: 'EQUAL', value: b('') }, 'q')], [])),
    'txn',
  );
  assert.equal(empty.succeeded, false);
  assert.equal(ok(h.txn(txn([], [])), 'txn').succeeded, true, 'no compares succeed');
});

void test('the chosen branch runs at one revision; later reads see earlier writes', () => {
  const h = seeded();
  const r = ok(
    h.txn(
      txn(
        [cmp('k', { target: 'VALUE', result: 'EQUAL', value: b('v2') })],
        [
          putOp('a', '1'),
          putOp('b', '2'),
          getOp('a'),
          delOp('j'),
          getOp('j'),
          getOp('k', { revision: 3 }),
        ],
        [putOp('fail', '1')],
      ),
    ),
    'txn',
  );
  assert.equal(r.succeeded, true);
  assert.equal(r.header.revision, 5);
  assert.equal(h.m.revision, 5);
  assert.equal(r.responses.length, 6);
  const got = r.responses[2]!;
  assert.equal(got.type, 'range');
  if (got.type === 'range') {
    assert.deepEqual(view(got.response.kvs[0]!), { k: 'a', v: '1', c: 5, m: 5, ver: 1, lease: 0n });
  }
  const gone = r.responses[4]!;
  assert.ok(gone.type === 'range' && gone.response.count === 0);
  const past = r.responses[5]!;
  assert.ok(past.type === 'range' && str(past.response.kvs[0]!.value) === 'v2');
  assert.ok(r.responses.every((x) => x.response.header.revision === 5));
  assert.deepEqual(h.dump(), ['a=1', 'b=2', 'k=v2']);
  // The failure branch runs when a compare fails.
  const f = ok(
    h.txn(
      txn(
        [cmp('k', { target: 'VERSION', result: 'EQUAL', version: 9 })],
        [putOp('s', '1')],
        [putOp('f', '1')],
      ),
    ),
    'txn',
  );
  assert.equal(f.succeeded, false);
  assert.equal(f.header.revision, 6);
  assert.deepEqual(h.dump('f'), ['f=1']);
  assert.deepEqual(h.dump('s'), []);
});

void test('nested txns decide their branch on the state before the outer txn', () => {
  const h = seeded();
  const inner = txn(
    [cmp('new', { target: 'CREATE', result: 'EQUAL', createRevision: 0 })],
    [putOp('inner-absent', '1')],
    [putOp('inner-present', '1')],
  );
  const r = ok(h.txn(txn([], [putOp('new', '1'), { type: 'txn', request: inner }])), 'txn');
  const nested = r.responses[1]!;
  assert.ok(nested.type === 'txn' && nested.response.succeeded);
  // etcd leaves a nested txn's own header empty (seen against etcd 3.4.23, test/compat); its
  // operations carry the revision.
  assert.equal(nested.response.header.revision, 0);
  assert.equal(nested.response.responses[0]?.response.header.revision, 5);
  assert.deepEqual(h.dump('inner'), ['inner-absent=1']);
});

void test('a txn that writes nothing keeps the revision; prev_kv and deletes inside', () => {
  const h = seeded();
  const r = ok(h.txn(txn([], [getOp('k'), delOp('missing')])), 'txn');
  assert.equal(r.header.revision, 4);
  const w = ok(h.txn(txn([], [putOp('k', 'v3', { prevKv: true }), delOp('j')])), 'txn');
  const p = w.responses[0]!;
  assert.ok(
    p.type === 'put' && p.response.prevKv !== undefined && str(p.response.prevKv.value) === 'v2',
  );
  const d = w.responses[1]!;
  assert.ok(d.type === 'deleteRange' && d.response.deleted === 1);
});

const E = {
  tooMany: { code: 'InvalidArgument', message: 'etcdserver: too many operations in txn request' },
  dup: { code: 'InvalidArgument', message: 'etcdserver: duplicate key given in txn request' },
  emptyKey: { code: 'InvalidArgument', message: 'etcdserver: key is not provided' },
  keyNotFound: { code: 'InvalidArgument', message: 'etcdserver: key not found' },
  leaseNotFound: { code: 'NotFound', message: 'etcdserver: requested lease not found' },
  future: {
    code: 'OutOfRange',
    message: 'etcdserver: mvcc: required revision is a future revision',
  },
  sort: { code: 'InvalidArgument', message: 'etcdserver: invalid sort option' },
  valueProvided: { code: 'InvalidArgument', message: 'etcdserver: value is provided' },
};

void test('txn validation errors', () => {
  const h = seeded();
  const puts = (n: number, p = 'k') => Array.from({ length: n }, (_, i) => putOp(`${p}${i}`, 'v'));
  const versionCmp = cmp('k', { target: 'VERSION', result: 'GREATER', version: 0 });
  const nested = (req: TxnRequest): RequestOp => ({ type: 'txn', request: req });
  const table: [string, TxnRequest, object | null][] = [
    ['128 ops are allowed', txn([], puts(128)), null],
    ['129 success ops', txn([], puts(129)), E.tooMany],
    ['129 failure ops', txn([], [], puts(129)), E.tooMany],
    [
      '129 compares',
      txn(
        Array.from({ length: 129 }, () => versionCmp),
        [],
      ),
      E.tooMany,
    ],
    [
      'nested budget: 100 outer + 29 inner is too many',
      txn([], [...puts(99, 'o'), nested(txn([], puts(29, 'i')))]),
      E.tooMany,
    ],
    [
      'nested budget: 100 + 28 fits',
      txn([], [...puts(99, 'o'), nested(txn([], puts(28, 'i')))]),
      null,
    ],
    [
      'empty compare key',
      txn([cmp('', { target: 'VERSION', result: 'EQUAL', version: 0 })], []),
      E.emptyKey,
    ],
    ['empty put key', txn([], [putOp('', 'v')]), E.emptyKey],
    ['empty range key', txn([], [getOp('')]), E.emptyKey],
    ['empty delete key', txn([], [delOp('')]), E.emptyKey],
    ['empty op', txn([], [{ type: 'empty' }]), E.keyNotFound],
    ['empty op in the failure branch', txn([], [], [{ type: 'empty' }]), E.keyNotFound],
    ['invalid sort option', txn([], [getOp('k', { sortOrder: 'X' as 'NONE' })]), E.sort],
    [
      'ignore_value with a value',
      txn([], [putOp('k', 'v', { ignoreValue: true })]),
      E.valueProvided,
    ],
    ['put twice', txn([], [putOp('a', '1'), putOp('a', '2')]), E.dup],
    ['put in a deleted range', txn([], [delOp('a', 'c'), putOp('b', '1')]), E.dup],
    ['delete after put', txn([], [putOp('b', '1'), delOp('a', 'c')]), E.dup],
    ['put twice via nested', txn([], [putOp('a', '1'), nested(txn([], [putOp('a', '2')]))]), E.dup],
    [
      'nested delete covers outer put',
      txn([], [putOp('a', '1'), nested(txn([], [], [delOp('a')]))]),
      E.dup,
    ],
    ['same key in then and else', txn([], [putOp('a', '1')], [putOp('a', '2')]), null],
    [
      'same key in a nested then and else',
      txn([], [nested(txn([], [putOp('a', '1')], [putOp('a', '2')]))]),
      null,
    ],
    ['overlapping deletes are fine', txn([], [delOp('a', 'c'), delOp('b', 'd')]), null],
    [
      'unknown lease in the chosen branch',
      txn([], [putOp('a', '1', { lease: 77n })]),
      E.leaseNotFound,
    ],
    ['unknown lease in the branch not taken', txn([], [], [putOp('a', '1', { lease: 77n })]), null],
    [
      'ignore_value on a missing key',
      txn([], [putOp('zz', '', { ignoreValue: true })]),
      E.keyNotFound,
    ],
    ['future range revision', txn([], [getOp('k', { revision: 99 })]), E.future],
    [
      'precheck inside a nested txn',
      txn([], [nested(txn([], [putOp('a', '1', { lease: 77n })]))]),
      E.leaseNotFound,
    ],
  ];
  for (const [name, req, want] of table) {
    const before = h.m.revision;
    const r = h.txn(req);
    if (want === null) {
      assert.equal(r.type, 'txn', name);
    } else {
      assert.deepEqual({ ...errorOf(r) }, want, name);
      assert.equal(h.m.revision, before, `${name}: a failed txn writes nothing`);
    }
  }
});

void test('a failed precheck aborts the whole txn, earlier ops included', () => {
  const h = seeded();
  const r = h.txn(txn([], [putOp('first', '1'), putOp('second', '2', { lease: 404n })]));
  assert.deepEqual({ ...errorOf(r) }, E.leaseNotFound);
  assert.deepEqual(h.dump('first'), []);
});

test('a read-only txn off the log answers as apply would and changes nothing', () => {
  const reads = [
    txn([cmp('k', { target: 'VALUE', result: 'EQUAL', value: b('v2') })], [getOp('k'), getOp('j')]),
    txn([cmp('k', { target: 'VERSION', result: 'LESS', version: 1 })], [], [getOp('k')]),
    txn([], [{ type: 'txn', request: txn([], [getOp('j')]) }]),
  ];
  for (const request of reads) {
    const a = seeded();
    const bRun = seeded();
    const before = a.m.digest();
    const revision = a.m.revision;
    const offLog = a.m.txnReadOnly(request);
    assert.equal(a.m.digest(), before, 'the state is unchanged');
    assert.equal(a.m.revision, revision, 'no new revision');
    assert.deepEqual(offLog, bRun.txn(request), 'the same answer as through apply');
  }
  const h = seeded();
  assert.throws(() => h.m.txnReadOnly(txn([], [putOp('k', 'w')])), /writes/);
});
