// After a failed sample of a workload that stops members: start every member that is down again
// on its data directory, then wait until the cluster agrees on a leader.
import { readyTimeoutMs } from '../config.js';
import type { WorkloadContext } from './workload.js';

export async function restartDownMembers(ctx: WorkloadContext): Promise<void> {
  for (let i = 0; i < ctx.pids.length; i++) {
    if (ctx.pids[i] === undefined) await ctx.members.restart(i);
  }
  await ctx.members.waitReady(readyTimeoutMs);
}
