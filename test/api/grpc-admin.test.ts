// Cluster, Maintenance and Health over gRPC (etcd's server/etcdserver/api/v3rpc/member.go,
// maintenance.go and health.go) on one in-memory member, and the methods tenure does not serve
// (UNIMPLEMENTED, including Auth.AuthStatus, which etcd 3.5 added and 3.4 answers with
// UNIMPLEMENTED). The same calls against real clusters: test/compat/leadership-suite.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
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

test("MemberUpdate and MemberPromote answer with the members, or etcd's errors", async () => {
  const add = await f.client.ok('/etcdserverpb.Cluster/MemberAdd', {
    peerURLs: ['http://10.0.0.3:2380'],
    isLearner: true,
  });
  const id = (add['member'] as Obj)['ID'];
  const update = await f.client.ok('/etcdserverpb.Cluster/MemberUpdate', {
    ID: id,
    peerURLs: ['http://10.0.0.4:2380'],
  });
  const updated = (update['members'] as Obj[]).find((m) => m['ID'] === id);
  assert.deepEqual(updated?.['peerURLs'], ['http://10.0.0.4:2380']);
  assert.equal(updated?.['isLearner'], true, 'an update leaves a learner a learner');
  const taken = await f.client.unary('/etcdserverpb.Cluster/MemberUpdate', {
    ID: '1',
    peerURLs: ['http://10.0.0.4:2380'],
  });
  assert.deepEqual(taken.error, {
    code: grpc.status.FAILED_PRECONDITION,
    details: 'etcdserver: Peer URLs already exists',
  });
  const unknown = await f.client.unary('/etcdserverpb.Cluster/MemberUpdate', {
    ID: '99',
    peerURLs: ['http://10.0.0.5:2380'],
  });
  assert.deepEqual(unknown.error, {
    code: grpc.status.NOT_FOUND,
    details: 'etcdserver: member not found',
  });
  const promote = await f.client.ok('/etcdserverpb.Cluster/MemberPromote', { ID: id });
  const promoted = (promote['members'] as Obj[]).find((m) => m['ID'] === id);
  assert.equal(promoted?.['isLearner'], false);
  const again = await f.client.unary('/etcdserverpb.Cluster/MemberPromote', { ID: id });
  assert.deepEqual(again.error, {
    code: grpc.status.FAILED_PRECONDITION,
    details: 'etcdserver: can only promote a learner member',
  });
  await f.client.ok('/etcdserverpb.Cluster/MemberRemove', { ID: id });
});

test('MoveLeader: to itself at once; a learner or no member is a bad transferee', async () => {
  assert.deepEqual(await f.client.ok('/etcdserverpb.Maintenance/MoveLeader', { targetID: '1' }), {
    header: null,
  });
  const bad = await f.client.unary('/etcdserverpb.Maintenance/MoveLeader', { targetID: '99' });
  assert.deepEqual(bad.error, {
    code: grpc.status.FAILED_PRECONDITION,
    details: 'etcdserver: bad leader transferee',
  });
  const add = await f.client.ok('/etcdserverpb.Cluster/MemberAdd', {
    peerURLs: ['http://10.0.0.6:2380'],
    isLearner: true,
  });
  const id = (add['member'] as Obj)['ID'];
  const learner = await f.client.unary('/etcdserverpb.Maintenance/MoveLeader', { targetID: id });
  assert.equal(learner.error?.details, 'etcdserver: bad leader transferee');
  await f.client.ok('/etcdserverpb.Cluster/MemberPromote', { ID: id });
  // A voter that never answers: etcd's unmapped timeout (code Unknown).
  const stuck = await f.client.unary('/etcdserverpb.Maintenance/MoveLeader', { targetID: id });
  assert.deepEqual(stuck.error, {
    code: grpc.status.UNKNOWN,
    details: 'etcdserver: request timed out, leader transfer took too long',
  });
  await f.client.ok('/etcdserverpb.Cluster/MemberRemove', { ID: id });
});

test('unserved methods and the 3.5-only AuthStatus answer UNIMPLEMENTED', async () => {
  for (const path of ['/etcdserverpb.Maintenance/Downgrade']) {
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

test('with auth on, MoveLeader, MemberUpdate and MemberPromote need the root role', async () => {
  const g = await startFixture(new MemoryBackend(), { bcryptCost: 4 });
  try {
    const call = (path: string, req: object, token?: string) =>
      g.client.unary(path, req, token === undefined ? {} : { token });
    const auth = (name: string, req: object) => g.client.ok(`/etcdserverpb.Auth/${name}`, req);
    await auth('UserAdd', { name: 'root', password: 'rootpw' });
    await auth('UserGrantRole', { user: 'root', role: 'root' });
    await auth('UserAdd', { name: 'alice', password: 'alicepw' });
    await auth('AuthEnable', {});
    const login = async (name: string, password: string): Promise<string> => {
      const r = await call('/etcdserverpb.Auth/Authenticate', { name, password });
      return r.value?.['token'] as string;
    };
    const alice = await login('alice', 'alicepw');
    const root = await login('root', 'rootpw');
    const move = '/etcdserverpb.Maintenance/MoveLeader';
    // As Defragment and Hash are refused: code Unknown, the auth package's own text.
    assert.deepEqual((await call(move, { targetID: '1' }, alice)).error, {
      code: grpc.status.UNKNOWN,
      details: 'auth: permission denied',
    });
    assert.deepEqual((await call(move, { targetID: '1' })).error, {
      code: grpc.status.UNKNOWN,
      details: 'auth: user name is empty',
    });
    assert.equal((await call(move, { targetID: '1' }, root)).error, undefined);
    const denied = {
      code: grpc.status.PERMISSION_DENIED,
      details: 'etcdserver: permission denied',
    };
    const update = { ID: '1', peerURLs: ['http://10.0.0.9:2380'] };
    assert.deepEqual(
      (await call('/etcdserverpb.Cluster/MemberUpdate', update, alice)).error,
      denied,
    );
    assert.deepEqual(
      (await call('/etcdserverpb.Cluster/MemberPromote', { ID: '1' }, alice)).error,
      denied,
    );
    assert.equal((await call('/etcdserverpb.Cluster/MemberUpdate', update, root)).error, undefined);
  } finally {
    await g.close();
  }
});
