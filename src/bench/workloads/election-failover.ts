// g. Election failover through the SDK: elector A (a separate process, `elector-child.js`) leads
// an election with session TTL `electionTtlSeconds`; elector B (in the bench process) campaigns
// and queues behind it; A is killed with SIGKILL at a random phase of its renewal cycle
// (TTL/3); the sample is the time from the kill to B's onStartedLeading. Bounded by the lease
// TTL, not by Raft, as in the etcd baseline.
import { fileURLToPath } from 'node:url';
import { connect, LeaderElector, type RecipeTraceEvent } from '../../client/index.js';
import { electionGiveUpTtls } from '../config.js';
import { pollUntil } from '../../launcher/poll.js';
import { exited, running, stopProcess } from '../../launcher/processes.js';
import { spawnRecipeChild } from './recipe-child.js';
import { sampledWorkload } from './samples.js';
import type { Workload, WorkloadContext } from './workload.js';

const childScript = fileURLToPath(new URL('../elector-child.js', import.meta.url));
/** How long the child may take to start and lead, in ms. */
const childLeadTimeoutMs = 20_000;
const pollMs = 10;

function until(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  return pollUntil(what, cond, { timeoutMs, intervalMs: pollMs });
}

async function oneElection(ctx: WorkloadContext, sample: number): Promise<number> {
  const ttlSeconds = ctx.sizes.electionTtlSeconds;
  const name = `k/e${ctx.tag}/${sample}`;
  const a = spawnRecipeChild(childScript, ctx, name, ['a', String(ttlSeconds)], '"leading"');
  const client = await connect({
    endpoints: ctx.endpoints,
    ...(ctx.tls === undefined ? {} : { tls: ctx.tls }),
  });
  let ledAt: number | undefined;
  const events: RecipeTraceEvent[] = [];
  const b = new LeaderElector(client, {
    name,
    identity: 'b',
    ttlSeconds,
    trace: (e) => events.push(e),
    onStartedLeading: () => {
      ledAt ??= performance.now();
    },
  });
  try {
    await until(
      'elector A to lead',
      () => {
        if (!running(a.child)) throw new Error(`elector A exited: ${a.stderr()}`);
        return a.ready();
      },
      childLeadTimeoutMs,
    );
    b.start();
    await until(
      'elector B to queue',
      () => events.some((e) => e.type === 'watch-predecessor'),
      childLeadTimeoutMs,
    );
    // A random phase of A's renewal cycle (TTL/3), as in the baseline.
    await new Promise((r) => setTimeout(r, Math.random() * ((ttlSeconds * 1000) / 3)));
    const pid = a.child.pid;
    if (pid === undefined) throw new Error('elector A has no pid');
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    await exited(a.child);
    await until(
      'elector B to lead',
      () => ledAt !== undefined,
      ttlSeconds * 1000 * electionGiveUpTtls,
    );
    return (ledAt as number) - killedAt;
  } finally {
    await stopProcess(a.child);
    await b.stop();
    await client.close();
  }
}

export const electionFailover: Workload = {
  name: 'election-failover',
  title: 'elector kill -9 → another elector leads (SDK)',
  opName: 'failover',
  latencyName: 'failover time',
  cpuPerOp: false,
  prepare(ctx) {
    return sampledWorkload('election failover', ctx.sizes.electionSamples, (s) =>
      oneElection(ctx, s),
    );
  },
};
