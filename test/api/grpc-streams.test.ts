// Lease (unary and the KeepAlive stream) and Watch over gRPC (etcd's
// server/etcdserver/api/v3rpc/lease.go and watch.go): created, events with prev_kv, filters,
// cancel, compacted, progress, and `hasleader` streams ending with `etcdserver: no leader` when
// the leader is lost.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { revision } from '../../src/core/base/units.js';
import type { KeyValue } from '../../src/core/state/kv-types.js';
import type { WatchResponse } from '../../src/core/state/watch-hub.js';
import { fragmentResponse } from '../../src/server/api/watch-service.js';
import type { Obj } from './api-fixture.js';
import { LeaderSwitchBackend, b, startFixture, text } from './api-fixture.js';

const KV = '/etcdserverpb.KV';
const LEASE = '/etcdserverpb.Lease';
const WATCH = '/etcdserverpb.Watch/Watch';

test('lease grant, attach a key, time-to-live with keys, leases, revoke', async () => {
  const f = await startFixture();
  try {
    const grant = await f.client.ok(`${LEASE}/LeaseGrant`, { TTL: 30 });
    const id = grant['ID'] as string;
    assert.notEqual(id, '0');
    assert.equal(grant['TTL'], '30');
    await f.client.ok(`${KV}/Put`, { key: b('lk'), value: b('v'), lease: id });
    const ttl = await f.client.ok(`${LEASE}/LeaseTimeToLive`, { ID: id, keys: true });
    assert.equal(ttl['grantedTTL'], '30');
    assert.deepEqual((ttl['keys'] as Buffer[]).map(text), ['lk']);
    const leases = await f.client.ok(`${LEASE}/LeaseLeases`, {});
    assert.deepEqual(leases['leases'], [{ ID: id }]);
    await f.client.ok(`${LEASE}/LeaseRevoke`, { ID: id });
    const gone = await f.client.ok(`${KV}/Range`, { key: b('lk') });
    assert.equal(gone['count'], '0');
    const unknown = await f.client.ok(`${LEASE}/LeaseTimeToLive`, { ID: id });
    assert.equal(unknown['TTL'], '-1');
    const again = await f.client.unary(`${LEASE}/LeaseRevoke`, { ID: id });
    assert.deepEqual(again.error, {
      code: status.NOT_FOUND,
      details: 'etcdserver: requested lease not found',
    });
    const dup = await f.client.ok(`${LEASE}/LeaseGrant`, { TTL: 5, ID: 77 });
    assert.equal(dup['ID'], '77');
    const exists = await f.client.unary(`${LEASE}/LeaseGrant`, { TTL: 5, ID: 77 });
    assert.deepEqual(exists.error, {
      code: status.FAILED_PRECONDITION,
      details: 'etcdserver: lease already exists',
    });
    const tooLong = await f.client.unary(`${LEASE}/LeaseGrant`, { TTL: 9_000_000_001 });
    assert.deepEqual(tooLong.error, {
      code: status.OUT_OF_RANGE,
      details: 'etcdserver: too large lease TTL',
    });
  } finally {
    await f.close();
  }
});

test('keepalive stream renews a live lease and answers TTL 0 for an unknown one', async () => {
  const f = await startFixture();
  try {
    const grant = await f.client.ok(`${LEASE}/LeaseGrant`, { TTL: 10 });
    const ka = f.client.bidi(`${LEASE}/LeaseKeepAlive`);
    ka.write({ ID: grant['ID'] });
    const r1 = await ka.next();
    assert.equal(r1['ID'], grant['ID']);
    assert.equal(r1['TTL'], '10');
    ka.write({ ID: 999 });
    const r2 = await ka.next();
    assert.equal(r2['TTL'], '0');
    ka.call.end();
    assert.equal((await ka.status()).code, status.OK);
  } finally {
    await f.close();
  }
});

test('watch: created, events with prev_kv, filters, cancel', async () => {
  const f = await startFixture();
  try {
    const w = f.client.bidi(WATCH);
    w.write({ create_request: { key: b('w/'), range_end: b('w0'), prev_kv: true } });
    const created = await w.next();
    assert.equal(created['created'], true);
    assert.equal(created['watch_id'], '0');
    w.write({ create_request: { key: b('w/a'), filters: ['NOPUT'], watch_id: 7 } });
    assert.equal((await w.next())['watch_id'], '7');
    await f.client.ok(`${KV}/Put`, { key: b('w/a'), value: b('1') });
    await f.client.ok(`${KV}/Put`, { key: b('w/a'), value: b('2') });
    await f.client.ok(`${KV}/DeleteRange`, { key: b('w/a') });
    const seen: Obj[] = [];
    while (seen.length < 4) {
      const r = await w.next();
      for (const e of r['events'] as Obj[]) seen.push({ ...e, watch: r['watch_id'] });
    }
    const summary = seen.map((e) => [
      e['watch'],
      e['type'],
      text((e['kv'] as Obj)['value']),
      e['prev_kv'] === null ? null : text((e['prev_kv'] as Obj)['value']),
    ]);
    assert.deepEqual(summary, [
      ['0', 'PUT', '1', null],
      ['0', 'PUT', '2', '1'],
      ['0', 'DELETE', '', '2'],
      ['7', 'DELETE', '', null],
    ]);
    w.write({ cancel_request: { watch_id: 0 } });
    const canceled = await w.next();
    assert.equal(canceled['canceled'], true);
    assert.equal(canceled['watch_id'], '0');
    w.write({ create_request: { key: b('w/b'), watch_id: 7 } });
    const dup = await w.next();
    assert.equal(dup['watch_id'], '-1');
    assert.equal(dup['cancel_reason'], 'mvcc: duplicate watch ID provided on the WatchStream');
    w.write({ progress_request: {} });
    const progress = await w.next();
    assert.equal(progress['watch_id'], '-1');
    w.cancel();
  } finally {
    await f.close();
  }
});

test('watch from a compacted revision is cancelled with the compact revision', async () => {
  const f = await startFixture();
  try {
    for (const v of ['1', '2', '3']) await f.client.ok(`${KV}/Put`, { key: b('c'), value: b(v) });
    await f.client.ok(`${KV}/Compact`, { revision: 3 });
    const w = f.client.bidi(WATCH);
    w.write({ create_request: { key: b('c'), start_revision: 2 } });
    assert.equal((await w.next())['created'], true);
    const r = await w.next();
    assert.equal(r['canceled'], true);
    assert.equal(r['compact_revision'], '3');
    w.write({ create_request: { key: b('c'), start_revision: 3 } });
    await w.next();
    const replay = await w.next();
    assert.equal(text(((replay['events'] as Obj[])[0]?.['kv'] as Obj)['value']), '2');
    w.cancel();
  } finally {
    await f.close();
  }
});

test('hasleader: unary calls fail without a leader, streams end when it is lost', async () => {
  const backend = new LeaderSwitchBackend();
  const f = await startFixture(backend);
  try {
    const w = f.client.bidi(WATCH, { hasleader: 'true' });
    w.write({ create_request: { key: b('x') } });
    assert.equal((await w.next())['created'], true);
    const plain = f.client.bidi(WATCH);
    plain.write({ create_request: { key: b('x') } });
    await plain.next();
    backend.setLeader(false);
    assert.deepEqual(await w.status(), {
      code: status.UNAVAILABLE,
      details: 'etcdserver: no leader',
    });
    const r = await f.client.unary(`${KV}/Range`, { key: b('x') }, { hasleader: 'true' });
    assert.deepEqual(r.error, { code: status.UNAVAILABLE, details: 'etcdserver: no leader' });
    const health = await f.client.ok('/grpc.health.v1.Health/Check', {});
    assert.equal(health['status'], 'NOT_SERVING');
    backend.setLeader(true);
    // A stream without hasleader is not affected.
    await f.client.ok(`${KV}/Put`, { key: b('x'), value: b('v') });
    assert.equal(((await plain.next())['events'] as Obj[]).length, 1);
    plain.cancel();
  } finally {
    await f.close();
  }
});

test('closing the server ends open watch streams with etcdserver: server stopped', async () => {
  const f = await startFixture();
  const w = f.client.bidi(WATCH);
  w.write({ create_request: { key: b('x') } });
  await w.next();
  const closed = f.api.close();
  assert.deepEqual(await w.status(), {
    code: status.UNAVAILABLE,
    details: 'etcdserver: server stopped',
  });
  await closed;
  f.client.close();
});

test('fragmentResponse splits only large multi-event responses, marking all but the last', () => {
  const kv = (key: string, size: number): KeyValue => ({
    key: b(key),
    createRevision: revision(2),
    modRevision: revision(2),
    version: 1,
    value: new Uint8Array(size),
    lease: 0n,
  });
  const response = (sizes: number[]): WatchResponse => ({
    header: { revision: revision(2) },
    watchId: 1,
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: '',
    events: sizes.map((n, i) => ({ type: 'PUT', kv: kv(`k${i}`, n) })),
  });
  assert.equal(fragmentResponse(response([10, 10]), 1000).length, 1);
  assert.equal(fragmentResponse(response([5000]), 1000).length, 1, 'one event is never split');
  const pieces = fragmentResponse(response([600, 600, 600]), 1000);
  assert.deepEqual(
    pieces.map((p) => [p.response.events.length, p.fragment]),
    [
      [1, true],
      [1, true],
      [1, false],
    ],
  );
});
