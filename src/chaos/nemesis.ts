// The nemesis: one fault at a time on the live cluster, each healed and followed by a wait until
// every member is ready again, while the workloads run. The classes come in cycles, each a
// shuffle of the enabled ones, so a run of one cycle injects every class once; a run starts no
// step after its deadline but always finishes its first cycle. Jepsen's etcd analysis
// (jepsen.io/analyses/etcd-3.4.3) ran the same menu: partitions, process pauses, kills; the
// faults-*.ts files add starvation, skewed and jumping clocks, torn and failing disks and
// membership changes.
import type { Prng } from '../core/base/prng.js';
import { sleep } from '../launcher/poll.js';
import type { Anomaly } from './anomaly.js';
import type { ClockWindows } from './clock-windows.js';
import { partitionLeaderStarved, starve } from './faults-starve.js';
import { currentLeader, uniform } from './fault-kit.js';
import { verifyLinks, verifyShape } from './verify-cut.js';
import { clockJump, clockRate } from './faults-clock.js';
import { fsyncFail, walTail } from './faults-disk.js';
import { memberRejoin } from './faults-membership.js';
import { cut, restore, restoreAll } from './links.js';
import type { Members } from './members.js';
import type { FaultName } from './options.js';
import { shapeOf, shuffled, type PartitionFault } from './shapes.js';
import type { Timeline } from './timeline.js';

/** A hang guard, not a speed check: the cluster must recover within this. */
const recoveryTimeoutMs = 60_000;

export interface NemesisContext {
  readonly members: Members;
  readonly prng: Prng;
  readonly timeline: Timeline;
  /** Where a fault that skews a member's clock records when and how much. */
  readonly clocks: ClockWindows;
  readonly signal: AbortSignal;
  readonly anomaly: (a: Anomaly) => void;
}

async function partition(ctx: NemesisContext, fault: PartitionFault): Promise<void> {
  const leader = await currentLeader(ctx);
  const shape = shapeOf(fault, ctx.members.cluster.size, leader, ctx.prng, ctx.members.names);
  const { timeline: t, prng, signal } = ctx;
  cut(shape.links);
  try {
    if (fault === 'partition-flapping') {
      const flips = prng.int(4, 9);
      t.add(fault, `${shape.description}, flapping ${flips} times`);
      await verifyLinks(ctx, shape.links);
      for (let k = 0; k < flips; k++) {
        await sleep(uniform(prng, 300, 1_500), signal);
        if (k % 2 === 0) restore(shape.links);
        else cut(shape.links);
      }
      return;
    }
    t.add(fault, shape.description);
    const held = (await verifyLinks(ctx, shape.links)) && (await verifyShape(ctx, shape));
    t.add('note', held ? 'cut verified' : 'cut NOT verified');
    await sleep(uniform(prng, 1_000, 5_000), signal);
  } finally {
    restore(shape.links);
    restoreAll();
    t.add('heal', 'links restored');
  }
}

async function pause(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  const x = ctx.prng.int(0, c.size);
  const ms = uniform(ctx.prng, 200, 5_000);
  ctx.timeline.add('pause', `SIGSTOP ${ctx.members.names[x]} for ${ms.toFixed(0)} ms`);
  await c.kill(x, 'SIGSTOP');
  try {
    await sleep(ms, ctx.signal);
  } finally {
    await c.kill(x, 'SIGCONT');
    ctx.timeline.add('heal', `SIGCONT ${ctx.members.names[x]}`);
  }
}

async function kill(ctx: NemesisContext, which: 'one' | 'leader' | 'all'): Promise<void> {
  const c = ctx.members.cluster;
  const all = Array.from({ length: c.size }, (_, i) => i);
  const victims =
    which === 'all'
      ? all
      : [
          which === 'leader'
            ? ((await currentLeader(ctx)) ?? ctx.prng.int(0, c.size))
            : ctx.prng.int(0, c.size),
        ];
  const names = victims.map((i) => ctx.members.names[i]).join(',');
  ctx.timeline.add(`kill-${which}`, `kill -9 ${names}`);
  await Promise.all(victims.map((i) => c.kill(i, 'SIGKILL')));
  await sleep(uniform(ctx.prng, 500, 3_000), ctx.signal);
  for (const i of victims) await c.restart(i);
  ctx.timeline.add('heal', `restarted ${names}`);
}

export async function injectFault(ctx: NemesisContext, fault: FaultName): Promise<void> {
  switch (fault) {
    case 'pause':
      return pause(ctx);
    case 'kill-one':
      return kill(ctx, 'one');
    case 'kill-leader':
      return kill(ctx, 'leader');
    case 'kill-all':
      return kill(ctx, 'all');
    case 'starve':
      return starve(ctx);
    case 'partition-leader-starved':
      return partitionLeaderStarved(ctx);
    case 'clock-rate':
      return clockRate(ctx);
    case 'clock-jump':
      return clockJump(ctx);
    case 'wal-tail':
      return walTail(ctx);
    case 'member-rejoin':
      return memberRejoin(ctx);
    case 'fsync-fail':
      return fsyncFail(ctx);
    default:
      return partition(ctx, fault);
  }
}

/**
 * After a step: wait until every member is ready again (readiness.ts: all answer, agree on a
 * leader and serve a linearizable read). Not within the bound, or a member that exited on its
 * own, is an anomaly: every fault here heals, and a healed cluster must serve again.
 */
export async function awaitRecovery(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  try {
    await c.waitReady(recoveryTimeoutMs, { signal: ctx.signal });
    ctx.timeline.add('ready', 'every member ready');
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    const message = e instanceof Error ? e.message : String(e);
    ctx.anomaly({
      workload: 'cluster',
      kind: 'no-recovery',
      message: `the cluster did not recover after the fault was healed: ${message.split('\n')[0] ?? ''}`,
      atMs: performance.now(),
      excerpt: message.split('\n').slice(1, 40),
    });
    // Start what exited on its own, so the run can go on.
    for (let i = 0; i < c.size; i++)
      if (c.pids[i] === undefined) await c.restart(i).catch(() => undefined);
    ctx.timeline.add('note', 'restarted members that had exited');
  }
}

/** The classes of one cycle, in a fresh random order. */
export function cycle(prng: Prng, faults: readonly FaultName[]): FaultName[] {
  return shuffled(prng, faults);
}
