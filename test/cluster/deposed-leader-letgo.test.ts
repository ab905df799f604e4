// A deposed leader lets go at once (issue 19): with both followers stopped (SIGSTOP), writes and
// linearizable reads sent to the leader wait, since nothing can commit or be confirmed; when the
// leader steps down (CheckQuorum, an election timeout or two later) every one of them is answered
// then, not at its deadline: each write as an unknown outcome (it is in the old leader's log and
// may yet commit), each read as `leader changed` (nothing was done: the client reads elsewhere).
// How long after the step-down the answers came is printed, never asserted (a measurement:
// `tenure bench` measures speed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startCluster } from './cluster.js';
import { GrpcKv } from './grpc-kv.js';
import { eventually } from '../support/poll.js';

const DEADLINE_MS = 8_000;
const HELD_PUTS = 5;
const HELD_READS = 5;

interface Answer {
  readonly op: 'put' | 'range';
  readonly atMs: number;
  readonly error: string;
}

function details(e: unknown): string {
  const d = (e as { details?: unknown }).details;
  return typeof d === 'string' ? d : String(e);
}

/** Wall-clock time (the log's `ts`, as etcd writes it) of the member's last "stepped down" line. */
function steppedDownAtMs(log: string): number | undefined {
  let at: number | undefined;
  for (const line of log.split('\n')) {
    if (!line.includes('"stepped down"')) continue;
    const ts = (JSON.parse(line.slice(line.indexOf('{'))) as { ts?: unknown }).ts;
    if (typeof ts === 'string') at = Date.parse(ts);
  }
  return at;
}

test(
  'requests held by a deposed leader are answered at its step-down',
  { timeout: 120_000 },
  async (t) => {
    const cluster = await startCluster({ kind: 'tenure', size: 3 });
    const clients = cluster.endpoints.map((e) => new GrpcKv(e));
    const stopped: number[] = [];
    try {
      const st = await (clients[0] as GrpcKv).status();
      const leader = (await Promise.all(clients.map((c) => c.status()))).findIndex(
        (s) => s.memberId === st.leader,
      );
      assert.ok(leader >= 0, 'a leader');
      const kv = clients[leader] as GrpcKv;
      await kv.put('held/warm', 'x');
      for (let i = 0; i < cluster.size; i++) {
        const pid = cluster.pids[i];
        if (i === leader || pid === undefined) continue;
        process.kill(pid, 'SIGSTOP');
        stopped.push(pid);
      }
      const sentAtMs = Date.now();
      const answers: Answer[] = [];
      const record = (op: Answer['op']) => (e: unknown) => {
        answers.push({ op, atMs: Date.now(), error: details(e) });
      };
      const ops: Promise<unknown>[] = [];
      for (let i = 0; i < HELD_PUTS; i++)
        ops.push(
          kv
            .put(`held/${i}`, 'v', DEADLINE_MS)
            .then(() => assert.fail('a put committed'), record('put')),
        );
      for (let i = 0; i < HELD_READS; i++)
        ops.push(
          kv
            .range('held/', DEADLINE_MS)
            .then(() => assert.fail('a read was served'), record('range')),
        );
      await Promise.all(ops);
      // The member's log is written asynchronously: wait for the line.
      const downAtMs = await eventually(
        'the leader logs its step-down',
        () => Promise.resolve(steppedDownAtMs(cluster.logTail(leader, 400))),
        10_000,
      );
      for (const a of answers) {
        const want =
          a.op === 'put'
            ? 'etcdserver: request timed out, possibly due to previous leader failure'
            : 'etcdserver: leader changed';
        assert.equal(a.error, want, `${a.op} answered with ${a.error}`);
      }
      const after = answers.map((a) => a.atMs - downAtMs);
      t.diagnostic(
        `step-down ${downAtMs - sentAtMs} ms after the requests were sent; answered ` +
          `${Math.min(...after)} to ${Math.max(...after)} ms after it (wall clock, log time ms)`,
      );
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
      for (const c of clients) c.close();
      await cluster.stop();
    }
  },
);
