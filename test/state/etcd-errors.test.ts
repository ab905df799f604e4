// The error table, pinned byte-for-byte: clients match on these strings (etcd's
// api/v3rpc/rpctypes/error.go).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as E from '../../src/core/state/etcd-errors.js';

void test('every KV and Lease error has etcd exact code and message', () => {
  const table: [E.EtcdError, string, string][] = [
    [E.ERR_EMPTY_KEY, 'InvalidArgument', 'etcdserver: key is not provided'],
    [E.ERR_KEY_NOT_FOUND, 'InvalidArgument', 'etcdserver: key not found'],
    [E.ERR_VALUE_PROVIDED, 'InvalidArgument', 'etcdserver: value is provided'],
    [E.ERR_LEASE_PROVIDED, 'InvalidArgument', 'etcdserver: lease is provided'],
    [E.ERR_TOO_MANY_OPS, 'InvalidArgument', 'etcdserver: too many operations in txn request'],
    [E.ERR_DUPLICATE_KEY, 'InvalidArgument', 'etcdserver: duplicate key given in txn request'],
    [E.ERR_INVALID_SORT_OPTION, 'InvalidArgument', 'etcdserver: invalid sort option'],
    [E.ERR_COMPACTED, 'OutOfRange', 'etcdserver: mvcc: required revision has been compacted'],
    [E.ERR_FUTURE_REV, 'OutOfRange', 'etcdserver: mvcc: required revision is a future revision'],
    [E.ERR_NO_SPACE, 'ResourceExhausted', 'etcdserver: mvcc: database space exceeded'],
    [E.ERR_LEASE_NOT_FOUND, 'NotFound', 'etcdserver: requested lease not found'],
    [E.ERR_LEASE_EXIST, 'FailedPrecondition', 'etcdserver: lease already exists'],
    [E.ERR_LEASE_TTL_TOO_LARGE, 'OutOfRange', 'etcdserver: too large lease TTL'],
    [E.ERR_REQUEST_TOO_LARGE, 'InvalidArgument', 'etcdserver: request is too large'],
  ];
  for (const [e, code, message] of table) {
    assert.deepEqual({ ...e }, { code, message });
    assert.ok(E.isEtcdError(e));
    assert.ok(Object.isFrozen(e));
  }
  assert.equal(E.WATCH_CANCEL_COMPACTED, 'etcdserver: mvcc: required revision has been compacted');
  assert.equal(E.WATCH_CANCEL_DUPLICATE_ID, 'mvcc: duplicate watch ID provided on the WatchStream');
  assert.equal(E.WATCH_CANCEL_EMPTY_RANGE, 'mvcc: watcher range is empty');
  assert.ok(!E.isEtcdError({ header: { revision: 1 }, kvs: [], more: false, count: 0 }));
});
