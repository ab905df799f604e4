// A rolling restart of a 3-member cluster while clients write: each member in turn gets SIGTERM
// (the current leader first, so that each step is a hand-off when it can be), is started again
// from its data dir, and is waited for until it has caught up; meanwhile writers put keys through
// tenure's SDK one after another. Returned: every failure a writer saw, every write it was told
// was done, what the cluster holds at the end, and the longest time no write was acknowledged.
// The tests judge the failures and the writes; the times are printed, never asserted.
import { connect, type Client } from '../../src/client/index.js';
import { startCluster, type BackendKind, type Cluster } from './cluster.js';
import { EtcdGrpc } from '../compat/grpc-client.js';
import { eventually, until } from '../support/poll.js';

/** Writers putting keys at the same time, each one write after another. */
const writersCount = 3;
/** Key prefix of the writes. */
const prefix = 'rolling/';

export interface RollingRestartResult {
  /** What each failed put threw: class name and message. */
  readonly failures: readonly string[];
  /** Keys the SDK said were written, with the value written. */
  readonly acked: ReadonlyMap<string, string>;
  /** Keys and values under the prefix at the end, read through a linearizable range. */
  readonly stored: ReadonlyMap<string, string>;
  /** The longest time between two acknowledgements, any writer's, while members restarted. */
  readonly longestGapMs: number;
  /** Per step: the member restarted, whether it led, and SIGTERM to exit. */
  readonly steps: readonly {
    readonly name: string;
    readonly led: boolean;
    readonly stopMs: number;
  }[];
}

interface MemberStatus {
  readonly memberId: string;
  readonly leader: string;
  readonly raftIndex: number;
  readonly appliedIndex: number;
}

async function statusOf(g: EtcdGrpc): Promise<MemberStatus | undefined> {
  const r = await g.unary('Maintenance', 'Status', {}, 2_000);
  if (!('ok' in r)) return undefined;
  const s = r.ok as {
    header: { member_id: string };
    leader: string;
    raftIndex: string;
    raftAppliedIndex: string;
  };
  return {
    memberId: String(s.header.member_id),
    leader: String(s.leader),
    raftIndex: Number(s.raftIndex),
    appliedIndex: Number(s.raftAppliedIndex),
  };
}

export async function rollingRestart(kind: BackendKind): Promise<RollingRestartResult> {
  const cluster: Cluster = await startCluster({ kind, size: 3 });
  const grpcs = cluster.endpoints.map((e) => new EtcdGrpc(e));
  let client: Client | undefined;
  try {
    client = await connect({ endpoints: cluster.endpoints });
    const kv = client.kv;
    const failures: string[] = [];
    const acked = new Map<string, string>();
    let lastAckMs = performance.now();
    let longestGapMs = 0;
    let measuring = false;
    let stop = false;
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; !stop; n++) {
        const key = `${prefix}${w}/${n}`;
        const value = `v${n}`;
        try {
          await kv.put(key, value);
          acked.set(key, value);
          const now = performance.now();
          if (measuring) longestGapMs = Math.max(longestGapMs, now - lastAckMs);
          lastAckMs = now;
        } catch (e) {
          failures.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
        }
      }
    };
    const writers = Array.from({ length: writersCount }, (_, w) => writer(w));
    await until('the first writes', () => acked.size >= 10);
    measuring = true;
    lastAckMs = performance.now();

    const steps: { name: string; led: boolean; stopMs: number }[] = [];
    const restarted = new Set<number>();
    while (restarted.size < cluster.size) {
      const statuses = await Promise.all(grpcs.map((g) => statusOf(g).catch(() => undefined)));
      const leaderId = statuses.find((s) => s !== undefined && s.leader !== '0')?.leader;
      const leaderIndex = statuses.findIndex((s) => s?.memberId === leaderId);
      const next =
        leaderIndex >= 0 && !restarted.has(leaderIndex)
          ? leaderIndex
          : [0, 1, 2].find((i) => !restarted.has(i));
      if (next === undefined) break;
      const stoppedAt = performance.now();
      await cluster.kill(next, 'SIGTERM');
      steps.push({
        name: cluster.names[next] as string,
        led: next === leaderIndex,
        stopMs: performance.now() - stoppedAt,
      });
      await cluster.restart(next);
      restarted.add(next);
      // Caught up: it knows a leader and has applied what the leader had committed meanwhile.
      await eventually(
        `${cluster.names[next]} catches up`,
        async () => {
          const all = await Promise.all(grpcs.map((g) => statusOf(g).catch(() => undefined)));
          const mine = all[next];
          const leader = all.find((s) => s !== undefined && s.memberId === s.leader);
          if (mine === undefined || leader === undefined || mine.leader !== leader.memberId)
            return undefined;
          return mine.appliedIndex >= leader.raftIndex ? true : undefined;
        },
        30_000,
      );
    }
    // A little more writing on the restarted cluster, then stop.
    const total = acked.size;
    await until('writes after the restarts', () => acked.size >= total + 10);
    measuring = false;
    stop = true;
    await Promise.all(writers);
    const stored = new Map<string, string>();
    const all = await kv.range(prefix, { prefix: true });
    for (const kv2 of all.kvs) stored.set(kv2.key.toString(), kv2.value.toString());
    return { failures, acked, stored, longestGapMs, steps };
  } finally {
    await client?.close();
    for (const g of grpcs) g.close();
    await cluster.stop();
  }
}
