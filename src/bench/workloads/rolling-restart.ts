// rolling-restart (issue 19): the routine upgrade procedure. Each member in turn gets SIGTERM,
// the bench waits until it has exited, starts it again on its data directory and waits until
// the cluster is ready (every member answers, one agreed leader) before the next member, as
// etcd's upgrade guide asks (Documentation/upgrades: one member at a time). Under `gapWriters`
// SDK writers through every endpoint, a trial (all three members restarted) yields the longest
// stretch without an acknowledged write and the count of puts the client saw fail. A graceful
// stop lets a leader hand over (etcd transfers leadership on SIGTERM: etcdserver/server.go
// TransferLeadership), so the target is a gap near one round trip and no failed request. A member
// still running 5 s after its SIGTERM is killed (launcher stopProcess's grace), as an operator's
// systemd would after its stop timeout.
import { failoverLoadLeadMs, readyTimeoutMs } from '../config.js';
import { restartDownMembers } from './repair.js';
import { sampledWorkload, type Sample } from './samples.js';
import { startGapWriters, type WriteGaps } from './write-gaps.js';
import type { Workload, WorkloadContext } from './workload.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const members = 3;

async function oneRollingRestart(ctx: WorkloadContext): Promise<Sample> {
  await ctx.members.waitReady(readyTimeoutMs);
  const writers = await startGapWriters(ctx, 'r');
  let gaps: WriteGaps;
  try {
    await sleep(failoverLoadLeadMs);
    for (let i = 0; i < members; i++) {
      await ctx.members.kill(i, 'SIGTERM');
      await ctx.members.restart(i);
      await ctx.members.waitReady(readyTimeoutMs);
    }
    // The writers go on a little, so a gap at the last restart ends in the window.
    await sleep(failoverLoadLeadMs);
  } finally {
    gaps = await writers.stop();
  }
  return { ms: gaps.longestGapMs, extra: { failedPuts: gaps.failed, ackedPuts: gaps.acked } };
}

export const rollingRestart: Workload = {
  name: 'rolling-restart',
  title: 'SIGTERM, restart, ready, each member in turn: longest write gap (SDK)',
  opName: 'failover',
  latencyName: 'write gap',
  cpuPerOp: false,
  extraRows: [
    { key: 'failedPuts', label: 'failed puts, sum over restarts', better: 'lower' },
    { key: 'ackedPuts', label: 'acknowledged puts', better: 'higher' },
  ],
  prepare(ctx) {
    return sampledWorkload(
      'rolling restart',
      ctx.sizes.rollingRestarts,
      () => oneRollingRestart(ctx),
      () => restartDownMembers(ctx),
      ['failedPuts', 'ackedPuts'],
    );
  },
};
