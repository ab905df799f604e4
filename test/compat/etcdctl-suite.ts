// The etcdctl compatibility suite: Debian's etcdctl 3.4 against a 3-member cluster of either
// backend. Every assertion is about semantics both must share: output text, exit codes, error
// strings from etcd's api/v3rpc/rpctypes/error.go, and revisions relative to a start revision.
// Each test works under its own key prefix; compaction runs last because it cuts history.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  etcdctl,
  EtcdctlProcess,
  startCluster,
  type BackendKind,
  type Cluster,
  type EtcdctlResult,
} from '../cluster/cluster.js';
import { b64, parseJsonLongs } from './support.js';
import { eventually } from '../support/poll.js';

/** Bound on waiting for a long-running etcdctl's output (a hang guard, not a speed check). */
const linesTimeoutMs = 15_000;

const compactedError = 'Error: etcdserver: mvcc: required revision has been compacted';
const futureRevError = 'Error: etcdserver: mvcc: required revision is a future revision';
const leaseNotFound = 'etcdserver: requested lease not found';

interface JsonKv {
  key: string;
  value: string;
  create_revision: number;
  mod_revision: number;
  version: number;
}

export function etcdctlSuite(kind: BackendKind): void {
  describe(`etcdctl 3.4 against a 3-member ${kind} cluster`, () => {
    let cluster: Cluster | undefined;
    const spawned: EtcdctlProcess[] = [];

    const endpoints = (): readonly string[] => {
      assert.ok(cluster !== undefined, 'cluster started');
      return cluster.endpoints;
    };

    const run = (args: readonly string[], stdin?: string): Promise<EtcdctlResult> =>
      etcdctl(endpoints(), args, stdin === undefined ? {} : { stdin });

    /** Run, require exit 0, return stdout. */
    const ok = async (args: readonly string[], stdin?: string): Promise<string> => {
      const r = await run(args, stdin);
      assert.equal(r.code, 0, `etcdctl ${args.join(' ')} failed:\n${r.stderr}`);
      return r.stdout;
    };

    /** Run, require a failure, return etcdctl's final `Error: ...` line. */
    const fails = async (args: readonly string[]): Promise<string> => {
      const r = await run(args);
      assert.notEqual(r.code, 0, `etcdctl ${args.join(' ')} should fail; stdout:\n${r.stdout}`);
      const line = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('Error:'))
        .pop();
      assert.ok(line !== undefined, `no Error: line in\n${r.stderr}`);
      return line;
    };

    const start = (args: readonly string[]): EtcdctlProcess => {
      const p = new EtcdctlProcess(endpoints(), args);
      spawned.push(p);
      return p;
    };

    /** The store's current revision, from a read's header. */
    const revision = async (): Promise<number> => {
      const out = parseJsonLongs(await ok(['get', 'no-such-key', '-w', 'json'])) as {
        header: { revision: number };
      };
      return out.header.revision;
    };

    const keysUnder = async (prefix: string): Promise<string[]> =>
      (await ok(['get', prefix, '--prefix', '--keys-only'])).split('\n').filter((l) => l !== '');

    before(async () => {
      cluster = await startCluster({ kind, size: 3 });
    });

    after(async () => {
      for (const p of spawned) await p.stop('SIGKILL');
      await cluster?.stop();
    });

    test('put, get and del with --prefix, --rev, --prev-kv, --keys-only, --print-value-only', async () => {
      const r0 = await revision();
      assert.equal(await ok(['put', 'kv/a', '1']), 'OK\n');
      assert.equal(await ok(['put', 'kv/b', '2']), 'OK\n');
      assert.equal(await ok(['put', 'kv/c', '3']), 'OK\n');
      assert.equal(await ok(['put', 'kv/b', '22', '--prev-kv']), 'OK\nkv/b\n2\n');
      assert.equal(await ok(['get', 'kv/', '--prefix']), 'kv/a\n1\nkv/b\n22\nkv/c\n3\n');
      assert.equal(await ok(['get', 'kv/', '--prefix', '--keys-only']), 'kv/a\n\nkv/b\n\nkv/c\n\n');
      assert.equal(await ok(['get', 'kv/', '--prefix', '--print-value-only']), '1\n22\n3\n');
      assert.equal(await ok(['get', 'kv/b', `--rev=${r0 + 2}`]), 'kv/b\n2\n');
      assert.equal(await ok(['get', 'kv/b', `--rev=${r0 + 1}`]), '');
      assert.equal(await ok(['get', 'kv/b', 'kv/d']), 'kv/b\n22\nkv/c\n3\n');
      assert.equal(
        await ok(['get', 'kv/', '--prefix', '--sort-by=MODIFY', '--order=DESCEND']),
        'kv/b\n22\nkv/c\n3\nkv/a\n1\n',
      );
      assert.equal(await ok(['put', 'kv/b', '--prev-kv', '222']), 'OK\nkv/b\n22\n');

      const json = parseJsonLongs(await ok(['get', 'kv/', '--prefix', '-w', 'json'])) as {
        header: { revision: number };
        kvs: JsonKv[];
        count: number;
      };
      assert.equal(json.header.revision, r0 + 5);
      assert.equal(json.count, 3);
      assert.deepEqual(
        json.kvs.map((kv) => [
          b64(kv.key),
          b64(kv.value),
          kv.create_revision - r0,
          kv.mod_revision - r0,
          kv.version,
        ]),
        [
          ['kv/a', '1', 1, 1, 1],
          ['kv/b', '222', 2, 5, 3],
          ['kv/c', '3', 3, 3, 1],
        ],
      );
      const limited = parseJsonLongs(
        await ok(['get', 'kv/', '--prefix', '--limit=2', '-w', 'json']),
      ) as { kvs: JsonKv[]; count: number; more?: boolean };
      assert.equal(limited.kvs.length, 2);
      assert.equal(limited.more, true);
      assert.equal(limited.count, 3);

      assert.equal(await ok(['del', 'kv/b', '--prev-kv']), '1\nkv/b\n222\n');
      assert.equal(await ok(['del', 'kv/nothing']), '0\n');
      assert.equal(await revision(), r0 + 6, 'a delete that matched nothing keeps the revision');
      assert.equal(await ok(['del', 'kv/', '--prefix']), '2\n');
      assert.equal(await revision(), r0 + 7, 'one delete of two keys is one revision');
      assert.equal(await ok(['get', 'kv/', '--prefix']), '');
      assert.equal(
        await ok(['get', 'kv/', '--prefix', `--rev=${r0 + 6}`, '--keys-only']),
        'kv/a\n\nkv/c\n\n',
      );
    });

    test('txn with value, mod, create and version compares (--interactive=false)', async () => {
      const r0 = await revision();
      await ok(['put', 'txn/x', '1']);
      const branch = '\nput txn/y yes\n\nput txn/y no\n\n';
      assert.equal(
        await ok(['txn', '--interactive=false'], `value("txn/x") = "1"\n${branch}`),
        'SUCCESS\n\nOK\n',
      );
      assert.equal(await ok(['get', 'txn/y', '--print-value-only']), 'yes\n');
      assert.equal(
        await ok(['txn', '--interactive=false'], `value("txn/x") = "2"\n${branch}`),
        'FAILURE\n\nOK\n',
      );
      assert.equal(await ok(['get', 'txn/y', '--print-value-only']), 'no\n');

      const compares = [
        `mod("txn/x") = "${r0 + 1}"`,
        `create("txn/x") = "${r0 + 1}"`,
        'version("txn/x") > "0"',
        'version("txn/absent") = "0"',
        'create("txn/absent") = "0"',
        'val("txn/x") != "9"',
      ].join('\n');
      assert.equal(
        await ok(
          ['txn', '--interactive=false'],
          `${compares}\n\nget txn/x\nput txn/z 1\ndel txn/x\n\n\n`,
        ),
        'SUCCESS\n\ntxn/x\n1\n\nOK\n\n1\n',
      );
      const afterWrite = await revision();
      assert.equal(afterWrite, r0 + 4, 'one txn with two writes is one revision');

      const readOnly = parseJsonLongs(
        await ok(
          ['txn', '--interactive=false', '-w', 'json'],
          `mod("txn/y") < "${r0 + 3}"\n\n\nget txn/y\n\n`,
        ),
      ) as {
        header: { revision: number };
        succeeded?: boolean;
        responses: Array<{ Response: { ResponseRange: { kvs: JsonKv[] } } }>;
      };
      assert.equal(readOnly.succeeded ?? false, false, 'mod(txn/y) is r0+3, not less');
      assert.equal(readOnly.header.revision, afterWrite, 'a read-only txn keeps the revision');
      const kvs = readOnly.responses[0]?.Response.ResponseRange.kvs ?? [];
      assert.deepEqual(
        kvs.map((kv) => [b64(kv.key), b64(kv.value)]),
        [['txn/y', 'no']],
      );
    });

    test('watch: live events with --prev-kv, replay from a past --rev, JSON events', async () => {
      const r0 = await revision();
      // Starting at r0+1 means no event can be missed however late the watch is created.
      const live = start(['watch', 'watch/', '--prefix', `--rev=${r0 + 1}`, '--prev-kv']);
      await ok(['put', 'watch/a', '1']);
      await ok(['put', 'watch/a', '2']);
      await ok(['del', 'watch/a']);
      const lines = await live.waitForLines(13, linesTimeoutMs);
      assert.deepEqual(lines.slice(0, 13), [
        ...['PUT', 'watch/a', '1'],
        ...['PUT', 'watch/a', '1', 'watch/a', '2'],
        ...['DELETE', 'watch/a', '2', 'watch/a', ''],
      ]);
      await live.stop();

      const past = start(['watch', 'watch/a', `--rev=${r0 + 2}`]);
      assert.deepEqual((await past.waitForLines(6, linesTimeoutMs)).slice(0, 6), [
        ...['PUT', 'watch/a', '2'],
        ...['DELETE', 'watch/a', ''],
      ]);
      await past.stop();

      // JSON output prints one line per WatchResponse; a server may batch events differently, so
      // compare the flattened events.
      const json = start(['watch', 'watch/', '--prefix', `--rev=${r0 + 1}`, '-w', 'json']);
      type Ev = { type?: number; kv: JsonKv };
      const events: Ev[] = [];
      for (let n = 1; events.length < 3; n++) {
        const got = await json.waitForLines(n, linesTimeoutMs);
        const parsed = parseJsonLongs(got[n - 1] ?? '') as { Events: Ev[] | null };
        events.push(...(parsed.Events ?? []));
      }
      await json.stop();
      assert.deepEqual(
        events.map((e) => [e.type ?? 0, b64(e.kv.key), e.kv.mod_revision - r0, e.kv.version ?? 0]),
        [
          [0, 'watch/a', 1, 1],
          [0, 'watch/a', 2, 2],
          [1, 'watch/a', 3, 0],
        ],
      );
    });

    test('lease grant, put --lease, timetolive --keys, keep-alive --once, list, revoke', async () => {
      const granted = await ok(['lease', 'grant', '60']);
      const m = /^lease ([0-9a-f]{16}) granted with TTL\(60s\)\n$/.exec(granted);
      assert.ok(m?.[1] !== undefined, granted);
      const id = m[1];
      assert.equal(await ok(['put', 'lease/k', 'v', `--lease=${id}`]), 'OK\n');
      const ttl = await ok(['lease', 'timetolive', id, '--keys']);
      const t =
        /^lease (\w+) granted with TTL\(60s\), remaining\((\d+)s\), attached keys\(\[lease\/k\]\)\n$/.exec(
          ttl,
        );
      assert.ok(t !== null, ttl);
      assert.equal(t[1], id);
      const remaining = Number(t[2]);
      assert.ok(remaining > 0 && remaining <= 60, ttl);
      assert.equal(
        await ok(['lease', 'keep-alive', '--once', id]),
        `lease ${id} keepalived with TTL(60)\n`,
      );
      const list = (await ok(['lease', 'list'])).split('\n');
      assert.match(list[0] ?? '', /^found \d+ leases$/);
      assert.ok(list.includes(id), `lease list names ${id}`);

      const kv = await ok(['get', 'lease/k', '-w', 'json']);
      const leaseField = /"lease":(\d+)/.exec(kv)?.[1];
      assert.equal(BigInt(leaseField ?? '0'), BigInt(`0x${id}`), 'the key carries the lease ID');

      assert.equal(await ok(['lease', 'revoke', id]), `lease ${id} revoked\n`);
      assert.equal(await ok(['get', 'lease/k']), '', 'revoke deletes attached keys');
      assert.equal(await ok(['lease', 'timetolive', id]), `lease ${id} already expired\n`);
      assert.equal(
        await fails(['lease', 'revoke', id]),
        `Error: failed to revoke lease (${leaseNotFound})`,
      );
      assert.equal(await fails(['lease', 'keep-alive', '--once', id]), `Error: ${leaseNotFound}`);
    });

    // 4 s: two etcdctl processes (put, get) must run within the TTL, on a loaded machine too.
    test('a key attached to a 4 s lease disappears when the lease expires', async () => {
      const granted = await ok(['lease', 'grant', '4']);
      const id = /^lease ([0-9a-f]{16}) granted with TTL\(4s\)\n$/.exec(granted)?.[1];
      assert.ok(id !== undefined, granted);
      await ok(['put', 'expire/k', 'v', `--lease=${id}`]);
      assert.equal(await ok(['get', 'expire/k', '--print-value-only']), 'v\n');
      await eventually('the leased key is deleted on expiry', async () =>
        (await ok(['get', 'expire/k'])) === '' ? true : undefined,
      );
      assert.equal(await ok(['lease', 'timetolive', id]), `lease ${id} already expired\n`);
    });

    test('lock: a second holder waits until the first is released (by SIGTERM)', async () => {
      const first = start(['lock', 'lock/L']);
      const [key1] = await first.waitForLines(1, linesTimeoutMs);
      assert.match(key1 ?? '', /^lock\/L\/[0-9a-f]+$/);
      const second = start(['lock', 'lock/L']);
      // Once the waiter's key exists it can only be granted after the first key is deleted.
      await eventually('the second locker queues its key', async () =>
        (await keysUnder('lock/L/')).length === 2 ? true : undefined,
      );
      assert.equal(second.lines.length, 0, 'the second locker does not hold the lock yet');
      assert.ok(second.running);
      await first.stop('SIGTERM');
      const [key2] = await second.waitForLines(1, linesTimeoutMs);
      assert.match(key2 ?? '', /^lock\/L\/[0-9a-f]+$/);
      assert.notEqual(key2, key1);
      assert.deepEqual(await keysUnder('lock/L/'), [key2]);
      await second.stop('SIGTERM');
      await eventually('the lock is free', async () =>
        (await keysUnder('lock/L/')).length === 0 ? true : undefined,
      );
    });

    test('lock -- command: ETCD_LOCK_KEY and ETCD_LOCK_REV', async () => {
      const r0 = await revision();
      const out = await ok([
        'lock',
        'lock/X',
        '--',
        'sh',
        '-c',
        'echo "$ETCD_LOCK_KEY $ETCD_LOCK_REV"',
      ]);
      const m = /^(lock\/X\/[0-9a-f]+) (\d+)\n$/.exec(out);
      assert.ok(m !== null, out);
      assert.equal(Number(m[2]), r0 + 1, 'uncontended: the lock revision is the key creation');
      assert.deepEqual(await keysUnder('lock/X/'), [], 'the key is deleted after the command');
    });

    test('elect: a campaigner, an observer (-l), and a successor after resignation', async () => {
      const first = start(['elect', 'elect/E', 'p1']);
      const [key1, value1] = await first.waitForLines(2, linesTimeoutMs);
      assert.match(key1 ?? '', /^elect\/E\/[0-9a-f]+$/);
      assert.equal(value1, 'p1');
      const observer = start(['elect', '-l', 'elect/E']);
      assert.deepEqual((await observer.waitForLines(2, linesTimeoutMs)).slice(0, 2), [key1, 'p1']);
      const second = start(['elect', 'elect/E', 'p2']);
      await eventually('the second candidate queues its key', async () =>
        (await keysUnder('elect/E/')).length === 2 ? true : undefined,
      );
      assert.equal(second.lines.length, 0, 'the second candidate is not leader yet');
      await first.stop('SIGTERM');
      const [key2, value2] = await second.waitForLines(2, linesTimeoutMs);
      assert.notEqual(key2, key1);
      assert.equal(value2, 'p2');
      assert.deepEqual((await observer.waitForLines(4, linesTimeoutMs)).slice(2, 4), [key2, 'p2']);
      await second.stop('SIGTERM');
      await observer.stop('SIGTERM');
      await eventually('the election is empty', async () =>
        (await keysUnder('elect/E/')).length === 0 ? true : undefined,
      );
    });

    test('member list, endpoint status and endpoint health', async () => {
      const c = cluster;
      assert.ok(c !== undefined);
      const members = (await ok(['member', 'list']))
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split(', '));
      assert.equal(members.length, 3);
      const byName = [...members].sort((a, b) => (a[2] ?? '').localeCompare(b[2] ?? ''));
      byName.forEach((fields, i) => {
        const [id, status, name, peer, client, learner] = fields;
        assert.match(id ?? '', /^[0-9a-f]+$/);
        assert.equal(status, 'started');
        assert.equal(name, c.names[i]);
        assert.equal(peer, c.peerUrls[i]);
        assert.equal(client, c.endpoints[i]);
        assert.equal(learner, 'false');
      });
      const memberIds = new Set(members.map((f) => f[0]));

      // Simple form: endpoint, ID, version, db size, is leader, is learner, term, index, applied.
      const status = (await ok(['endpoint', 'status', '--cluster']))
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split(', '));
      assert.equal(status.length, 3);
      assert.deepEqual(status.map((f) => f[0]).sort(), [...c.endpoints].sort());
      assert.deepEqual(new Set(status.map((f) => f[1])), memberIds);
      for (const f of status) assert.match(f[2] ?? '', /^\d+\.\d+\.\d+/, 'version is semver');
      assert.equal(status.filter((f) => f[4] === 'true').length, 1, 'exactly one leader');
      assert.ok(
        status.every((f) => f[5] === 'false'),
        'no learners',
      );

      const json = parseJsonLongs(await ok(['endpoint', 'status', '-w', 'json'])) as Array<{
        Endpoint: string;
        Status: { header: { member_id: string }; leader: string; raftTerm: number };
      }>;
      assert.equal(json.length, 3);
      const leaders = new Set(json.map((s) => s.Status.leader));
      assert.equal(leaders.size, 1, 'all members agree on the leader');
      const leaderHex = BigInt([...leaders][0] ?? '0').toString(16);
      assert.ok(memberIds.has(leaderHex), `leader ${leaderHex} is a member`);

      const health = await run(['endpoint', 'health', '--cluster']);
      assert.equal(health.code, 0, health.stderr);
      // etcdctl 3.4 prints health results on stderr.
      const healthy = (health.stdout + health.stderr)
        .split('\n')
        .filter((l) => / is healthy: successfully committed proposal: took = /.test(l))
        .map((l) => l.split(' ')[0]);
      assert.deepEqual(healthy.sort(), [...c.endpoints].sort());
    });

    // Last: compaction discards the history the tests above read.
    test('compaction, then reads and watches of compacted and future revisions', async () => {
      const r0 = await revision();
      await ok(['put', 'comp/k', 'v1']);
      await ok(['put', 'comp/k', 'v2']);
      await ok(['put', 'comp/k', 'v3']);
      assert.equal(await ok(['compaction', String(r0 + 2)]), `compacted revision ${r0 + 2}\n`);
      assert.equal(await fails(['get', 'comp/k', `--rev=${r0 + 1}`]), compactedError);
      assert.equal(await ok(['get', 'comp/k', `--rev=${r0 + 2}`]), 'comp/k\nv2\n');
      assert.equal(await fails(['get', 'comp/k', `--rev=${r0 + 100}`]), futureRevError);
      assert.equal(await fails(['compaction', String(r0 + 1)]), compactedError);
      assert.equal(await fails(['compaction', String(r0 + 100)]), futureRevError);
      assert.equal(
        await ok(['compaction', '--physical', String(r0 + 3)]),
        `compacted revision ${r0 + 3}\n`,
      );

      const watch = start(['watch', 'comp/k', `--rev=${r0 + 1}`]);
      const code = await watch.exited();
      assert.notEqual(code, 0);
      assert.match(
        watch.stderr,
        /watch was canceled \(etcdserver: mvcc: required revision has been compacted\)/,
      );
    });
  });
}
