// The etcd fence against the contract suite on a 3-member tenure cluster and a 3-member etcd 3.4
// cluster (test/cluster/cluster.ts), through the SDK client. Tokens are real holder keys' create
// revisions: issuing a token deletes the previous holder's key and creates a new one, as a lock
// hand-over does. Plus the case fencing exists for: a holder whose lease expired (here: revoked)
// keeps writing, and etcd itself refuses it. Every member is stopped by PID in `after`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { connect, op, type Client } from '../../src/client/index.js';
import { EtcdFence, StaleTokenError } from '../../src/fence/index.js';
import { startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import { fenceContract, type ContractSubject } from './contract-suite.js';

function etcdSubject(client: Client, run: string): ContractSubject {
  const fence = new EtcdFence(client);
  /** Per scope: token → holder key, and the newest holder key. */
  const holders = new Map<string, Map<bigint, string>>();
  const newest = new Map<string, string>();
  let seq = 0;
  const name = (scope: string): string => `${run}/${scope}`;
  return {
    issue: async (scope) => {
      // Hand-over: the old holder's key goes, a new one (a later create revision) comes.
      await client.kv.delete(`${name(scope)}/`, { prefix: true });
      const key = `${name(scope)}/${(++seq).toString(16)}`;
      const token = (await client.kv.put(key, 'holder')).header.revision;
      const mine = holders.get(scope) ?? new Map<bigint, string>();
      holders.set(scope, mine.set(token, key));
      newest.set(scope, key);
      return token;
    },
    append: async (scope, token, value) => {
      const key = holders.get(scope)?.get(token) ?? `${name(scope)}/unknown`;
      await fence.write(key, token, (tx) => tx.then(op.put(`${name(scope)}.log/${value}`, value)));
    },
    log: async (scope) =>
      (
        await client.kv.range(`${name(scope)}.log/`, {
          prefix: true,
          sortTarget: 'create',
          sortOrder: 'ascend',
        })
      ).kvs.map((kv) => kv.value.toString()),
    current: async (scope) => {
      const key = newest.get(scope);
      return key === undefined ? undefined : fence.current(key);
    },
    close: () => Promise.resolve(),
  };
}

for (const kind of ['tenure', 'etcd'] as const satisfies readonly BackendKind[]) {
  describe(`etcd fence on a 3-member ${kind} cluster`, () => {
    let cluster: Cluster | undefined;
    let client: Client | undefined;
    const run = `fence-test-${randomBytes(4).toString('hex')}`;

    before(async () => {
      cluster = await startCluster({ kind, size: 3 });
      client = await connect({ endpoints: cluster.endpoints });
    });
    after(async () => {
      await client?.close();
      await cluster?.stop();
    });

    fenceContract(
      kind,
      () => {
        assert.ok(client !== undefined, 'cluster not started');
        return Promise.resolve(etcdSubject(client, run));
      },
      { markFollowsWrites: false },
    );

    test('a holder whose lease is gone is refused by etcd itself', async () => {
      assert.ok(client !== undefined);
      const fence = new EtcdFence(client);
      const lease = await client.lease.grant(30);
      const key = `${run}/leased/${lease.id.toString(16)}`;
      const token = (await client.kv.put(key, 'me', { lease: lease.id })).header.revision;
      await fence.write(key, token, (tx) => tx.then(op.put(`${run}/leased-data`, 'while held')));
      // The lease expires (revoked here, so the test does not wait): the key goes with it.
      await client.lease.revoke(lease.id);
      await assert.rejects(
        fence.write(key, token, (tx) => tx.then(op.put(`${run}/leased-data`, 'zombie'))),
        (e: unknown) => e instanceof StaleTokenError && e.presented === token && e.current === 0n,
      );
      assert.equal((await client.kv.get(`${run}/leased-data`))?.value.toString(), 'while held');
      assert.equal(await fence.current(key), undefined);
    });
  });
}
