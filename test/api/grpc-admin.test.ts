// Cluster, Maintenance and Health over gRPC (etcd's server/etcdserver/api/v3rpc/member.go,
// maintenance.go and health.go), and the methods tenure does not serve (UNIMPLEMENTED, including
// Auth.AuthStatus, which etcd 3.5 added and 3.4 answers with UNIMPLEMENTED).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { Fixture, Obj } from './api-fixture.js';
import { startFixture } from './api-fixture.js';

let f: Fixture;
before(async () => {
  f = await startFixture();
});
after(() => f.close());

test('Status reports version, leader and raft indexes', async () => {
  const s = await f.client.ok('/etcdserverpb.Maintenance/Status', {});
  assert.equal(s['version'], '3.4.0');
  assert.equal(s['leader'], '1');
  assert.equal((s['header'] as Obj)['member_id'], '1');
  assert.equal(s['raftTerm'], '1');
});

test('Alarm GET lists none; ACTIVATE raises one, DEACTIVATE clears it', async () => {
  const a = await f.client.ok('/etcdserverpb.Maintenance/Alarm', { action: 'GET' });
  assert.deepEqual(a['alarms'], []);
  await f.client.ok('/etcdserverpb.Maintenance/Alarm', { action: 'ACTIVATE', alarm: 'NOSPACE' });
  const again = await f.client.ok('/etcdserverpb.Maintenance/Alarm', {});
  assert.deepEqual(again['alarms'], [{ memberID: '0', alarm: 'NOSPACE' }]);
  await f.client.ok('/etcdserverpb.Maintenance/Alarm', { action: 'DEACTIVATE', alarm: 'NOSPACE' });
  const none = await f.client.ok('/etcdserverpb.Maintenance/Alarm', {});
  assert.deepEqual(none['alarms'], []);
});

test('MemberList, MemberAdd, MemberRemove and member not found', async () => {
  const list = await f.client.ok('/etcdserverpb.Cluster/MemberList', {});
  assert.deepEqual(
    (list['members'] as Obj[]).map((m) => [m['ID'], m['name']]),
    [['1', 'default']],
  );
  const add = await f.client.ok('/etcdserverpb.Cluster/MemberAdd', {
    peerURLs: ['http://10.0.0.2:2380'],
    isLearner: true,
  });
  const added = add['member'] as Obj;
  assert.deepEqual(added['peerURLs'], ['http://10.0.0.2:2380']);
  assert.equal((add['members'] as Obj[]).length, 2);
  const removed = await f.client.ok('/etcdserverpb.Cluster/MemberRemove', { ID: added['ID'] });
  assert.equal((removed['members'] as Obj[]).length, 1);
  const missing = await f.client.unary('/etcdserverpb.Cluster/MemberRemove', { ID: 99 });
  assert.deepEqual(missing.error, {
    code: grpc.status.NOT_FOUND,
    details: 'etcdserver: member not found',
  });
});

test('health Check is SERVING with a leader; an unknown service is NOT_FOUND', async () => {
  const h = await f.client.ok('/grpc.health.v1.Health/Check', { service: '' });
  assert.equal(h['status'], 'SERVING');
  const unknown = await f.client.unary('/grpc.health.v1.Health/Check', { service: 'nope' });
  assert.equal(unknown.error?.code, grpc.status.NOT_FOUND);
});

test('unserved methods and the 3.5-only AuthStatus answer UNIMPLEMENTED', async () => {
  for (const path of [
    '/etcdserverpb.Cluster/MemberPromote',
    '/etcdserverpb.Maintenance/MoveLeader',
  ]) {
    const r = await f.client.unary(path, {});
    assert.equal(r.error?.code, grpc.status.UNIMPLEMENTED, path);
  }
  const auth = await new Promise<grpc.ServiceError | null>((resolve) => {
    f.client.raw.makeUnaryRequest(
      '/etcdserverpb.Auth/AuthStatus',
      (x: Buffer) => x,
      (x: Buffer) => x,
      Buffer.alloc(0),
      (err) => resolve(err),
    );
  });
  assert.equal(auth?.code, grpc.status.UNIMPLEMENTED);
});
