// The etcd3 npm client (microsoft/etcd3 1.1.2) with etcd Auth, against a 3-member cluster of
// either backend: users, roles and grants through its User and Role builders, AuthEnable through
// its raw Auth client, then a password client that may write its prefix and nothing else, its
// typed errors, its re-authentication once its token is gone, and AuthDisable at the end.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Etcd3,
  EtcdAuthenticationFailedError,
  EtcdPermissionDeniedError,
  EtcdRoleNotFoundError,
  EtcdUserExistsError,
  Range,
} from 'etcd3';
import { startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';

export function etcd3AuthSuite(kind: BackendKind): void {
  describe(`etcd3 with auth against ${kind}`, () => {
    let cluster: Cluster;
    let admin: Etcd3;
    const hosts = (): string[] => [...cluster.endpoints];
    before(async () => {
      cluster = await startCluster({ kind, size: 3 });
      const open = new Etcd3({ hosts: hosts() });
      try {
        await open.user('root').create('rootpw');
        await open.user('root').addRole('root');
        await open.role('app').create();
        await open.role('app').grant({ permission: 'Readwrite', range: Range.prefix('app/') });
        await open.user('alice').create('apw');
        await open.user('alice').addRole('app');
        await open.auth.authEnable();
      } finally {
        open.close();
      }
      admin = new Etcd3({ hosts: hosts(), auth: { username: 'root', password: 'rootpw' } });
    });
    after(async () => {
      try {
        await admin.auth.authDisable();
        admin.close();
      } finally {
        await cluster.stop();
      }
    });

    test('the builders read back users, roles and grants', async () => {
      const users = (await admin.getUsers()).map((u) => u.name).sort();
      assert.deepEqual(users, ['alice', 'root']);
      const roles = (await admin.user('alice').roles()).map((r) => r.name);
      assert.deepEqual(roles, ['app']);
      const perms = await admin.role('app').permissions();
      assert.equal(perms.length, 1);
      assert.equal(perms[0]?.permission, 'Readwrite');
      await assert.rejects(admin.user('alice').create('again'), EtcdUserExistsError);
      await assert.rejects(admin.role('missing').permissions(), EtcdRoleNotFoundError);
    });

    test('a password client writes its prefix and is refused elsewhere', async () => {
      const alice = new Etcd3({ hosts: hosts(), auth: { username: 'alice', password: 'apw' } });
      try {
        await alice.put('app/1').value('one');
        assert.equal(await alice.get('app/1').string(), 'one');
        await assert.rejects(async () => {
          await alice.put('other').value('x');
        }, EtcdPermissionDeniedError);
        await assert.rejects(alice.get('other').string(), EtcdPermissionDeniedError);
        await assert.rejects(alice.getUsers(), EtcdPermissionDeniedError);
      } finally {
        alice.close();
      }
    });

    test('a wrong password is AuthenticationFailed', async () => {
      const eve = new Etcd3({ hosts: hosts(), auth: { username: 'alice', password: 'nope' } });
      try {
        await assert.rejects(eve.get('app/1').string(), EtcdAuthenticationFailedError);
      } finally {
        eve.close();
      }
    });

    test('after a password change the client signs in again with its new password', async () => {
      const bob = new Etcd3({ hosts: hosts(), auth: { username: 'bob', password: 'b1' } });
      try {
        await admin.user('bob').create('b1');
        await admin.user('bob').addRole('app');
        await bob.put('app/bob').value('1');
        // The change drops bob's token; the client's next call re-authenticates, with the
        // password it was given, which no longer works.
        await admin.user('bob').setPassword('b2');
        await assert.rejects(bob.get('app/bob').string(), EtcdAuthenticationFailedError);
      } finally {
        bob.close();
      }
      const again = new Etcd3({ hosts: hosts(), auth: { username: 'bob', password: 'b2' } });
      try {
        assert.equal(await again.get('app/bob').string(), '1');
      } finally {
        again.close();
      }
    });
  });
}
