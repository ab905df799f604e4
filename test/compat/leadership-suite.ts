// Leadership and membership changes through Debian's etcdctl 3.4 and raw gRPC, against a running
// cluster of either backend: move-leader to each member in turn, a learner added, refused
// promotion before it caught up and promoted after, a member's peer URLs changed and the member
// restarted on the new port, and a leader stopped with SIGTERM handing leadership on. Every
// message asserted is etcd 3.4.23's own (the etcd wrapper checks them against etcd itself), so
// the two wrappers together are a differential of these commands.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePorts } from '../../src/launcher/ports.js';
import { etcdctl, startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import { eventually } from '../support/poll.js';
import { EtcdGrpc } from './grpc-client.js';
import { parseJsonLongs } from './support.js';

/** One member as `etcdctl member list` prints it. */
interface ListedMember {
  readonly id: string;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly isLearner: boolean;
}

/** One member as `etcdctl endpoint status -w json` prints it. */
interface EndpointStatus {
  readonly endpoint: string;
  readonly id: string;
  readonly leader: string;
  readonly term: number;
  readonly appliedIndex: number;
  readonly isLearner: boolean;
}

const hex = (v: unknown): string => BigInt(v as string | number).toString(16);

export function leadershipSuite(kind: BackendKind): void {
  describe(`leadership and membership changes against a 3-member ${kind} cluster`, () => {
    let cluster: Cluster | undefined;
    const grpcs: EtcdGrpc[] = [];

    const c = (): Cluster => {
      assert.ok(cluster !== undefined, 'cluster started');
      return cluster;
    };

    /** The endpoints of the running members that serve requests (learners refuse them). */
    let voterEndpoints: readonly string[] = [];

    const run = (args: readonly string[], endpoints = voterEndpoints) => etcdctl(endpoints, args);

    const ok = async (args: readonly string[], endpoints = voterEndpoints): Promise<string> => {
      const r = await run(args, endpoints);
      assert.equal(r.code, 0, `etcdctl ${args.join(' ')} failed:\n${r.stderr}`);
      return r.stdout.trim();
    };

    /** Require a failure and return etcdctl's last `Error: ...` line. */
    const fails = async (args: readonly string[], endpoints = voterEndpoints): Promise<string> => {
      const r = await run(args, endpoints);
      assert.notEqual(r.code, 0, `etcdctl ${args.join(' ')} should fail; stdout:\n${r.stdout}`);
      const line = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('Error:'))
        .pop();
      assert.ok(line !== undefined, `no Error: line in\n${r.stderr}`);
      return line;
    };

    const members = async (): Promise<ListedMember[]> =>
      (await ok(['member', 'list'])).split('\n').map((line) => {
        const [id, , name, peers, , learner] = line.split(', ');
        return {
          id: id ?? '',
          name: name ?? '',
          peerUrls: (peers ?? '').split(','),
          isLearner: learner === 'true',
        };
      });

    const status = async (endpoints: readonly string[]): Promise<EndpointStatus[]> => {
      const out = await ok(['endpoint', 'status', '-w', 'json'], endpoints);
      const all = parseJsonLongs(out) as {
        Endpoint: string;
        Status: {
          header: { member_id: string | number };
          leader: string | number;
          raftTerm: number;
          raftAppliedIndex: number;
          isLearner?: boolean;
        };
      }[];
      return all.map((s) => ({
        endpoint: s.Endpoint,
        id: hex(s.Status.header.member_id),
        leader: hex(s.Status.leader),
        term: s.Status.raftTerm,
        appliedIndex: s.Status.raftAppliedIndex,
        isLearner: s.Status.isLearner === true,
      }));
    };

    /** The leader's ID and term once every running voter names the same leader. */
    const agreedLeader = (what: string) =>
      eventually(what, async () => {
        const all = await status(voterEndpoints).catch(() => []);
        const leaders = new Set(all.map((s) => s.leader));
        const [leader] = leaders;
        const terms = new Set(all.map((s) => s.term));
        if (all.length !== voterEndpoints.length || leaders.size !== 1 || leader === '0')
          return undefined;
        if (terms.size !== 1) return undefined;
        return { leader: leader as string, term: all[0]?.term as number };
      });

    const endpointOf = (id: string, of: readonly EndpointStatus[]): string => {
      const s = of.find((x) => x.id === id);
      assert.ok(s !== undefined, `member ${id} among ${of.map((x) => x.id).join(', ')}`);
      return s.endpoint;
    };

    before(async () => {
      cluster = await startCluster({ kind, size: 3 });
      voterEndpoints = cluster.endpoints;
    });

    after(async () => {
      for (const g of grpcs) g.close();
      await cluster?.stop();
    });

    test('move-leader hands leadership to each member in turn, one term each', async () => {
      const ids = (await members()).map((m) => m.id);
      let { leader, term } = await agreedLeader('a leader');
      for (const id of [...ids.filter((x) => x !== leader), leader]) {
        const out = await ok(['move-leader', id]);
        assert.equal(out, `Leadership transferred from ${leader} to ${id}`);
        const now = await agreedLeader(`${id} leads`);
        assert.equal(now.leader, id);
        // A transfer is one campaign of the target: exactly one term more (none to itself).
        assert.equal(now.term, id === leader ? term : term + 1);
        ({ leader, term } = now);
      }
      // The leader itself: etcd answers at once, the leader stays.
      assert.equal(
        await ok(['move-leader', leader]),
        `Leadership transferred from ${leader} to ${leader}`,
      );
      assert.equal(
        await fails(['move-leader', '1234']),
        'Error: etcdserver: bad leader transferee',
      );
    });

    test('MoveLeader on a follower is refused as not leader', async () => {
      const { leader } = await agreedLeader('a leader');
      const all = await status(voterEndpoints);
      const follower = all.find((s) => s.id !== leader);
      assert.ok(follower !== undefined);
      const g = new EtcdGrpc(follower.endpoint);
      grpcs.push(g);
      const target = BigInt(`0x${follower.id}`).toString();
      const r = await g.unary('Maintenance', 'MoveLeader', { targetID: target });
      assert.deepEqual(r, {
        error: { code: 'FAILED_PRECONDITION', details: 'etcdserver: not leader' },
      });
    });

    test('member update and promote refuse unknown members, used URLs and voters', async () => {
      const listed = await members();
      const [a, b] = listed;
      assert.ok(a !== undefined && b !== undefined);
      const [free] = await freePorts(1);
      const url = `http://127.0.0.1:${free}`;
      assert.equal(
        await fails(['member', 'update', '1234', `--peer-urls=${url}`]),
        'Error: etcdserver: member not found',
      );
      assert.equal(
        await fails(['member', 'update', a.id, `--peer-urls=${b.peerUrls.join(',')}`]),
        'Error: etcdserver: Peer URLs already exists',
      );
      assert.equal(
        await fails(['member', 'promote', a.id]),
        'Error: etcdserver: can only promote a learner member',
      );
      assert.equal(
        await fails(['member', 'promote', '1234']),
        'Error: etcdserver: member not found',
      );
    });

    test('a learner is refused promotion until it is in sync, then promoted', async () => {
      const cl = c();
      await ok(['put', 'learner/before', 'x']);
      const i = await cl.addMember('n4');
      const peerUrl = cl.peerUrls[i] as string;
      // etcd adds no member until its leader has been connected to every peer for 5 s
      // (server.go mayAddMember, isConnectedFullySince): a fresh cluster is `unhealthy`.
      const added = await eventually('the learner added', async () => {
        const r = await run(['member', 'add', 'n4', '--learner', `--peer-urls=${peerUrl}`]);
        if (r.code === 0) return r.stdout.trim();
        assert.match(r.stderr, /etcdserver: unhealthy cluster/);
        return undefined;
      });
      const m = /^Member\s+([0-9a-f]+) added to cluster\s+([0-9a-f]+)$/m.exec(added);
      assert.ok(m !== null, added);
      const id = m[1] as string;
      assert.match(added, /^ETCD_INITIAL_CLUSTER_STATE="existing"$/m);
      const listed = (await members()).find((x) => x.id === id);
      assert.deepEqual(listed && { isLearner: listed.isLearner, peerUrls: listed.peerUrls }, {
        isLearner: true,
        peerUrls: [peerUrl],
      });
      // Not started: its log matches nothing of the leader's.
      const notReady =
        'Error: etcdserver: can only promote a learner member which is in sync with leader';
      assert.equal(await fails(['member', 'promote', id]), notReady);
      // A learner does not take leadership.
      assert.equal(await fails(['move-leader', id]), 'Error: etcdserver: bad leader transferee');

      await cl.restart(i);
      const learnerEndpoint = cl.endpoints[i] as string;
      await eventually('the learner catches up', async () => {
        const [leaderStatus] = await status(voterEndpoints).then((all) =>
          all.filter((s) => s.id === s.leader),
        );
        const [mine] = await status([learnerEndpoint]).catch(() => []);
        if (leaderStatus === undefined || mine === undefined) return undefined;
        assert.equal(mine.isLearner, true);
        return mine.appliedIndex >= leaderStatus.appliedIndex ? true : undefined;
      });
      const promoted = await eventually('the promotion', async () => {
        const r = await run(['member', 'promote', id]);
        if (r.code === 0) return r.stdout.trim();
        // In sync by its applied index, the leader may not have heard its match yet.
        assert.match(r.stderr, /in sync with leader/);
        return undefined;
      });
      assert.match(promoted, new RegExp(`^Member\\s+${id} promoted in cluster\\s+[0-9a-f]+$`));
      const after = (await members()).find((x) => x.id === id);
      assert.equal(after?.isLearner, false);
      assert.equal(
        await fails(['member', 'promote', id]),
        'Error: etcdserver: can only promote a learner member',
      );
      voterEndpoints = [...voterEndpoints, learnerEndpoint];
      // A voter now: it serves linearizable reads and can lead.
      assert.equal(
        await ok(['get', 'learner/before', '--print-value-only'], [learnerEndpoint]),
        'x',
      );
      const { leader } = await agreedLeader('a leader of four');
      if (leader !== id) {
        assert.equal(
          await ok(['move-leader', id]),
          `Leadership transferred from ${leader} to ${id}`,
        );
      }
    });

    test('member update moves a member to a new peer port; it rejoins there', async () => {
      const cl = c();
      const all = await status(voterEndpoints);
      const { leader } = await agreedLeader('a leader');
      // A follower: its restart is not a hand-off as well.
      const target = all.find((s) => s.id !== leader);
      assert.ok(target !== undefined);
      const i = cl.endpoints.indexOf(target.endpoint);
      const [port] = await freePorts(1);
      const url = `http://127.0.0.1:${port}`;
      const out = await ok(['member', 'update', target.id, `--peer-urls=${url}`]);
      assert.match(out, new RegExp(`^Member\\s+${target.id} updated in cluster\\s+[0-9a-f]+$`));
      const listed = (await members()).find((m) => m.id === target.id);
      assert.deepEqual(listed?.peerUrls, [url]);
      await cl.kill(i, 'SIGTERM');
      await cl.restart(i, {}, { peerUrl: url });
      // Written while it was down and after: it can only have them from peers that reach it at
      // the new address.
      await ok(
        ['put', 'moved/after', 'y'],
        voterEndpoints.filter((e) => e !== target.endpoint),
      );
      await eventually('the moved member catches up', async () => {
        const r = await run(
          ['get', 'moved/after', '--print-value-only', '--consistency=s'],
          [target.endpoint],
        );
        return r.code === 0 && r.stdout.trim() === 'y' ? true : undefined;
      });
      await agreedLeader('every member agrees again');
      // It still has its new URL after its restart (its own publication keeps it).
      assert.deepEqual((await members()).find((m) => m.id === target.id)?.peerUrls, [url]);
    });

    test('SIGTERM on the leader hands leadership on: one term, no election timeout', async (t) => {
      const cl = c();
      const before = await agreedLeader('a leader');
      const all = await status(voterEndpoints);
      const leaderEndpoint = endpointOf(before.leader, all);
      const i = cl.endpoints.indexOf(leaderEndpoint);
      const sentMs = performance.now();
      await cl.kill(i, 'SIGTERM');
      voterEndpoints = voterEndpoints.filter((e) => e !== leaderEndpoint);
      const afterStop = await agreedLeader('a new leader');
      const handOffMs = performance.now() - sentMs;
      assert.notEqual(afterStop.leader, before.leader);
      assert.equal(afterStop.term, before.term + 1, 'a transfer, not an election: one term');
      // The old leader's log says it handed leadership on (etcd's zap message, and ours).
      const log = cl.logTail(i, 400);
      assert.match(log, /leadership transfer finished/);
      assert.doesNotMatch(log, /leadership transfer failed/);
      t.diagnostic(
        `${kind}: SIGTERM of the leader to a new leader agreed by the others: ` +
          `${handOffMs.toFixed(0)} ms`,
      );
    });
  });
}
