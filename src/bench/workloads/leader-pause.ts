// leader-pause (issue 19): the Raft leader is stopped with SIGSTOP for 0.5, 1.0, 1.5 or 2.0 s and
// continued with SIGCONT, as a long GC pause, a VM steal or a stalled disk would stop it. Per
// trial, under `gapWriters` SDK writers through every endpoint:
//
// - elections: Maintenance.Status before the pause and once the cluster has settled after it
//   (agreed leader, then `pauseSettleMs`, then agreed again); the Raft term's advance is the
//   count of elections the pause caused (a term starts with each election, Raft §5.2), and
//   whether the leader id changed is counted too.
// - write gap: the longest stretch without an acknowledged write of the background writers.
//
// A pause shorter than the election timeout should cause no election at all; one of a few
// election timeouts may. Each duration is a workload of its own (`leader-pause-1.5s`), so that
// the JSON and tables report each on its own rows; `--workloads leader-pause` selects all four.
import { failoverLoadLeadMs, pauseDurationsMs, pauseSettleMs, readyTimeoutMs } from '../config.js';
import { leaderIndex, statuses, type MemberStatus } from '../leader.js';
import { sampledWorkload, type Sample } from './samples.js';
import { startGapWriters, type WriteGaps } from './write-gaps.js';
import type { Workload, WorkloadContext } from './workload.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The highest Raft term any answering member reports. */
function termOf(all: readonly (MemberStatus | undefined)[]): bigint {
  let term = 0n;
  for (const s of all) if (s !== undefined && BigInt(s.raftTerm) > term) term = BigInt(s.raftTerm);
  return term;
}

/** Agreed leader's index, its member id and the term, once every member agrees. */
async function settledStatus(ctx: WorkloadContext): Promise<{ leaderId: string; term: bigint }> {
  await ctx.members.waitReady(readyTimeoutMs);
  const all = await statuses(ctx.endpoints, ctx.tls);
  const i = leaderIndex(all);
  const leaderId = i === undefined ? undefined : all[i]?.memberId;
  if (leaderId === undefined) throw new Error('members do not agree on a leader');
  return { leaderId, term: termOf(all) };
}

async function onePause(ctx: WorkloadContext, pauseMs: number): Promise<Sample> {
  const before = await settledStatus(ctx);
  const all = await statuses(ctx.endpoints, ctx.tls);
  const leader = all.findIndex((s) => s?.memberId === before.leaderId);
  if (leader < 0) throw new Error('the leader did not answer before the pause');
  const writers = await startGapWriters(ctx, 'p');
  let continued = false;
  let gaps: WriteGaps;
  try {
    await sleep(failoverLoadLeadMs);
    await ctx.members.kill(leader, 'SIGSTOP');
    await sleep(pauseMs);
    await ctx.members.kill(leader, 'SIGCONT');
    continued = true;
    // An election the pause provoked may end after SIGCONT: count it once the cluster settled.
    await ctx.members.waitReady(readyTimeoutMs);
    await sleep(pauseSettleMs);
  } finally {
    if (!continued) await ctx.members.kill(leader, 'SIGCONT');
    // Stopped on a failed trial too: its client and loops must not outlive the sample.
    gaps = await writers.stop();
  }
  const after = await settledStatus(ctx);
  return {
    ms: gaps.longestGapMs,
    extra: {
      elections: Number(after.term - before.term),
      leaderChanges: after.leaderId === before.leaderId ? 0 : 1,
      failedPuts: gaps.failed,
      trials: 1,
    },
  };
}

function pauseWorkload(pauseMs: number, index: number): Workload {
  const seconds = (pauseMs / 1000).toFixed(1);
  return {
    name: `leader-pause-${seconds}s`,
    title: `leader SIGSTOP ${seconds} s → SIGCONT: elections, longest write gap (SDK)`,
    opName: 'failover',
    latencyName: 'write gap',
    cpuPerOp: false,
    extraRows: [
      { key: 'trials', label: 'trials', better: 'higher' },
      { key: 'elections', label: 'elections (term advance), sum over trials', better: 'lower' },
      { key: 'leaderChanges', label: 'trials with a new leader', better: 'lower' },
      { key: 'failedPuts', label: 'failed puts, sum over trials', better: 'lower' },
    ],
    prepare(ctx) {
      return sampledWorkload(
        `leader pause ${seconds} s`,
        ctx.sizes.pauseTrials[index] ?? 1,
        () => onePause(ctx, pauseMs),
        () => ctx.members.waitReady(readyTimeoutMs),
        ['trials', 'elections', 'leaderChanges', 'failedPuts'],
      );
    },
  };
}

/** One workload per pause duration, in `pauseDurationsMs` order. */
export const leaderPauses: readonly Workload[] = pauseDurationsMs.map(pauseWorkload);
