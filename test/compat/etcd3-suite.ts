// The etcd3 (microsoft/etcd3, npm) compatibility suite against a 3-member cluster of either
// backend: the client's builders, typed errors, watchers and lease manager. Revisions are
// compared relative to a start revision; errors by class and by etcd's exact text.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Etcd3,
  EtcdError,
  EtcdLeaseInvalidError,
  GRPCInvalidArgumentError,
  GRPCOutOfRangeError,
  type IKeyValue,
  type Watcher,
} from 'etcd3';
import { startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import { eventually } from '../support/poll.js';

/** Bound on waiting for watch events or lease expiry (a hang guard, not a speed check). */
const eventTimeoutMs = 15_000;

interface SeenEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  readonly value: string;
  readonly modRevision: number;
  readonly version: number;
  readonly prevValue: string | undefined;
}

/** Collects a watcher's put/delete events; `next(n)` resolves once n have arrived. */
function collect(watcher: Watcher): { events: SeenEvent[]; next(n: number): Promise<SeenEvent[]> } {
  const events: SeenEvent[] = [];
  const wakers = new Set<() => void>();
  const push = (type: 'put' | 'delete', kv: IKeyValue, prev: IKeyValue | undefined): void => {
    events.push({
      type,
      key: kv.key.toString(),
      value: kv.value.toString(),
      modRevision: Number(kv.mod_revision),
      version: Number(kv.version),
      prevValue: prev?.value.toString(),
    });
    for (const wake of [...wakers]) wake();
  };
  watcher.on('put', (kv, prev) => push('put', kv, prev));
  watcher.on('delete', (kv, prev) => push('delete', kv, prev));
  return {
    events,
    next: (n) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (events.length >= n) {
            clearTimeout(timer);
            wakers.delete(check);
            resolve(events);
          }
        };
        const timer = setTimeout(() => {
          wakers.delete(check);
          reject(
            new Error(`only ${events.length} of ${n} watch events: ${JSON.stringify(events)}`),
          );
        }, eventTimeoutMs);
        wakers.add(check);
        check();
      }),
  };
}

export function etcd3Suite(kind: BackendKind): void {
  describe(`etcd3 npm client against a 3-member ${kind} cluster`, () => {
    let cluster: Cluster | undefined;
    let client: Etcd3 | undefined;

    const etcd = (): Etcd3 => {
      assert.ok(client !== undefined, 'client created');
      return client;
    };
    const revision = async (): Promise<number> =>
      Number((await etcd().get('no-such-key').exec()).header.revision);

    before(async () => {
      cluster = await startCluster({ kind, size: 3 });
      client = new Etcd3({ hosts: [...cluster.endpoints] });
    });

    after(async () => {
      client?.close();
      await cluster?.stop();
    });

    test('put, get, getAll, delete, prefixes and revisions', async () => {
      const c = etcd();
      const r0 = await revision();
      const put = await c.put('e3kv/a').value('1').exec();
      assert.equal(Number(put.header.revision), r0 + 1);
      await c.put('e3kv/b').value('2');
      await c.put('e3kv/c').value('3');
      const prev = await c.put('e3kv/b').value('22').getPrevious();
      assert.equal(prev.value.toString(), '2');
      assert.equal(Number(prev.header.revision), r0 + 4);

      assert.equal(await c.get('e3kv/b').string(), '22');
      assert.equal(
        await c
          .get('e3kv/b')
          .revision(r0 + 2)
          .string(),
        '2',
      );
      assert.equal(
        await c
          .get('e3kv/b')
          .revision(r0 + 1)
          .string(),
        null,
      );
      assert.equal(await c.get('e3kv/none').string(), null);
      assert.deepEqual(await c.getAll().prefix('e3kv/').strings(), {
        'e3kv/a': '1',
        'e3kv/b': '22',
        'e3kv/c': '3',
      });
      assert.deepEqual(await c.getAll().prefix('e3kv/').keys(), ['e3kv/a', 'e3kv/b', 'e3kv/c']);
      assert.equal(await c.getAll().prefix('e3kv/').count(), 3);

      const sorted = await c.getAll().prefix('e3kv/').sort('Mod', 'Descend').limit(2).exec();
      assert.deepEqual(
        sorted.kvs.map((kv) => kv.key.toString()),
        ['e3kv/b', 'e3kv/c'],
      );
      assert.equal(sorted.more, true);
      assert.equal(Number(sorted.count), 3);

      const full = await c.get('e3kv/b').exec();
      const kv = full.kvs[0];
      assert.ok(kv !== undefined);
      assert.deepEqual(
        [Number(kv.create_revision) - r0, Number(kv.mod_revision) - r0, Number(kv.version)],
        [2, 4, 2],
      );
      assert.equal(kv.lease, '0');

      const filtered = await c
        .getAll()
        .prefix('e3kv/')
        .minModRevision(r0 + 2)
        .keys();
      assert.deepEqual(filtered, ['e3kv/b', 'e3kv/c']);

      const deleted = await c.delete().key('e3kv/a').getPrevious();
      assert.deepEqual(
        deleted.map((d) => [d.key.toString(), d.value.toString()]),
        [['e3kv/a', '1']],
      );
      const none = await c.delete().key('e3kv/a').exec();
      assert.equal(none.deleted, '0');
      assert.equal(Number(none.header.revision), r0 + 5, 'nothing deleted: no new revision');
      const rest = await c.delete().prefix('e3kv/').exec();
      assert.equal(rest.deleted, '2');
      assert.equal(Number(rest.header.revision), r0 + 6);
      assert.equal(await c.get('e3kv/b').exists(), false);
    });

    test('txn: if/then/else on Value, Version, Create, Mod and Lease', async () => {
      const c = etcd();
      const r0 = await revision();
      await c.put('e3txn/x').value('1');
      const yes = await c
        .if('e3txn/x', 'Value', '==', '1')
        .then(c.put('e3txn/y').value('yes'))
        .else(c.put('e3txn/y').value('no'))
        .commit();
      assert.equal(yes.succeeded, true);
      assert.equal(Number(yes.header.revision), r0 + 2);
      assert.equal(await c.get('e3txn/y').string(), 'yes');

      const no = await c
        .if('e3txn/x', 'Value', '!=', '1')
        .then(c.put('e3txn/y').value('yes'))
        .else(c.put('e3txn/y').value('no'), c.get('e3txn/x'))
        .commit();
      assert.equal(no.succeeded, false);
      assert.equal(no.responses.length, 2);
      assert.equal(no.responses[1]?.response_range?.kvs[0]?.value.toString(), '1');
      assert.equal(await c.get('e3txn/y').string(), 'no');

      const all = await c
        .if('e3txn/x', 'Version', '==', 1)
        .and('e3txn/x', 'Create', '==', r0 + 1)
        .and('e3txn/x', 'Mod', '<', r0 + 2)
        .and('e3txn/y', 'Mod', '>', r0 + 1)
        .and('e3txn/absent', 'Create', '==', 0)
        .and('e3txn/x', 'Lease', '==', 0)
        .then(c.delete().key('e3txn/x'), c.delete().key('e3txn/y'))
        .commit();
      assert.equal(all.succeeded, true);
      assert.equal(Number(all.header.revision), r0 + 4, 'two deletes in one txn: one revision');
      assert.deepEqual(await c.getAll().prefix('e3txn/').keys(), []);
    });

    test('watch: live events, and replay from a past revision with previous values', async () => {
      const c = etcd();
      const r0 = await revision();
      const live = await c.watch().prefix('e3w/').create();
      const seen = collect(live);
      await c.put('e3w/a').value('1');
      await c.put('e3w/a').value('2');
      await c.delete().key('e3w/a');
      const events = await seen.next(3);
      assert.deepEqual(
        events.map((e) => [e.type, e.key, e.value, e.modRevision - r0, e.version]),
        [
          ['put', 'e3w/a', '1', 1, 1],
          ['put', 'e3w/a', '2', 2, 2],
          ['delete', 'e3w/a', '', 3, 0],
        ],
      );
      await live.cancel();

      const past = await c
        .watch()
        .key('e3w/a')
        .startRevision(String(r0 + 2))
        .withPreviousKV()
        .create();
      const replay = await collect(past).next(2);
      assert.deepEqual(
        replay.map((e) => [e.type, e.value, e.modRevision - r0, e.prevValue]),
        [
          ['put', '2', 2, '1'],
          ['delete', '', 3, '2'],
        ],
      );
      await past.cancel();

      const onlyDeletes = await c
        .watch()
        .key('e3w/a')
        .startRevision(String(r0 + 1))
        // etcd3 1.1.2's ignore() is an alias of only() (it sends the complementary filter), so
        // only('delete') is the way to ask for a NOPUT filter.
        .only('delete')
        .create();
      const deletes = await collect(onlyDeletes).next(1);
      assert.deepEqual(
        deletes.map((e) => [e.type, e.modRevision - r0]),
        [['delete', 3]],
      );
      await onlyDeletes.cancel();
    });

    test('lease: grant, attach keys, keepaliveOnce, revoke; then EtcdLeaseInvalidError', async () => {
      const c = etcd();
      const lease = c.lease(60, { autoKeepAlive: false });
      const id = await lease.grant();
      assert.match(id, /^\d+$/);
      await lease.put('e3l/a').value('1');
      await lease.put('e3l/b').value('2');
      const kv = (await c.get('e3l/a').exec()).kvs[0];
      assert.equal(kv?.lease, id);
      const alive = await lease.keepaliveOnce();
      assert.equal(alive.ID, id);
      assert.equal(alive.TTL, '60');

      const r = await revision();
      await lease.revoke();
      assert.deepEqual(await c.getAll().prefix('e3l/').keys(), []);
      assert.equal(await revision(), r + 1, 'revoking deletes all attached keys in one revision');

      const again = c.lease(60, { autoKeepAlive: false });
      await again.grant();
      await again.revoke();
      await assert.rejects(again.keepaliveOnce(), EtcdLeaseInvalidError);
    });

    test('lease: auto keepalive keeps a 2 s lease; an un-kept 2 s lease expires with its key', async () => {
      const c = etcd();
      const kept = c.lease(2);
      const dropped = c.lease(2, { autoKeepAlive: false });
      await kept.put('e3exp/kept').value('k');
      const put = await dropped.put('e3exp/dropped').value('d');
      try {
        // From the put on, so that an expiry before the watch exists (a loaded machine) is seen.
        const watcher = await c
          .watch()
          .key('e3exp/dropped')
          .only('delete')
          .startRevision(String(BigInt(put.header.revision) + 1n))
          .create();
        const expired = collect(watcher).next(1);
        // Three renewals span more than the 2 s TTL (etcd3 renews every TTL/3).
        const renewed = new Promise<void>((resolve) => {
          let n = 0;
          kept.on('keepaliveSucceeded', () => {
            if (++n === 3) resolve();
          });
        });
        const [events] = await Promise.all([expired, renewed]);
        assert.equal(events[0]?.key, 'e3exp/dropped');
        await watcher.cancel();
        assert.equal(await c.get('e3exp/dropped').string(), null);
        await eventually('the kept key is still there after the other lease expired', async () =>
          (await c.get('e3exp/kept').string()) === 'k' ? true : undefined,
        );
        await assert.rejects(dropped.keepaliveOnce(), EtcdLeaseInvalidError);
      } finally {
        await kept.revoke();
        dropped.release();
      }
    });

    test('errors: unknown lease, empty key, compacted and future revisions, compacted watch', async () => {
      const c = etcd();
      await assert.rejects(
        c.put('e3err/k').value('v').lease('1234').exec(),
        (e: unknown) =>
          e instanceof EtcdLeaseInvalidError &&
          e.message.includes('etcdserver: requested lease not found'),
      );
      await assert.rejects(
        c.put('').value('v').exec(),
        (e: unknown) =>
          e instanceof GRPCInvalidArgumentError &&
          e.message.includes('etcdserver: key is not provided'),
      );
      const r0 = await revision();
      await c.put('e3err/k').value('1');
      await c.put('e3err/k').value('2');
      await c.put('e3err/k').value('3');
      await c.kv.compact({ revision: String(r0 + 2) });
      await assert.rejects(
        c
          .get('e3err/k')
          .revision(r0 + 1)
          .string(),
        (e: unknown) =>
          e instanceof GRPCOutOfRangeError &&
          e.message.includes('etcdserver: mvcc: required revision has been compacted'),
      );
      assert.equal(
        await c
          .get('e3err/k')
          .revision(r0 + 2)
          .string(),
        '2',
      );
      await assert.rejects(
        c
          .get('e3err/k')
          .revision(r0 + 100)
          .string(),
        (e: unknown) =>
          e instanceof GRPCOutOfRangeError &&
          e.message.includes('etcdserver: mvcc: required revision is a future revision'),
      );

      const watcher = c
        .watch()
        .key('e3err/k')
        .startRevision(String(r0 + 1))
        .watcher();
      const error = await new Promise<Error>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no watch error')), eventTimeoutMs);
        watcher.on('error', (e) => {
          clearTimeout(timer);
          resolve(e);
        });
      });
      assert.ok(error instanceof EtcdError, String(error));
      // The server dropped the watcher; etcd3's cancel() would wait for a reply that never comes.
      assert.match(error.message, /^Watcher canceled: /);
    });
  });
}
