// CPU starvation: a member stopped and continued in short cycles (SIGSTOP for a few hundred ms,
// SIGCONT for a few tens), so it runs in slivers. Unlike one long pause it keeps answering, late:
// its timers fire once per sliver whatever time passed, so a member that counts timer callbacks
// instead of elapsed time falls behind real time (a leader whose CheckQuorum counts ticks stays
// leader long after its followers elected another). `partition-leader-starved` adds the cut that
// makes that matter: the leader's peer links are cut both ways while clients still reach it, so
// a new leader rises on the other side while the old one, starved, still serves what it answers
// from its own state (lease renewals, for one: the lease-safety issue's reproduction, "cut L's
// peer links and repeat kill -STOP L; sleep 0.3; kill -CONT L; sleep 0.03 for 6 s, then heal").
// Raft thesis §6.2 (CheckQuorum) and §6.4 (a leader confirms it still leads before it answers
// from its own state) are what such a member must still get right.
import { sleep } from '../launcher/poll.js';
import { cut, restore, restoreAll, type Link } from './links.js';
import { currentLeader, uniform } from './fault-kit.js';
import type { NemesisContext } from './nemesis.js';
import { verifyLinks, verifyShape } from './verify-cut.js';
import type { Shape } from './shapes.js';

/** How long a starvation lasts, and its cycles: stopped this long, then running this long. */
const starveMsMin = 2_000;
const starveMsMax = 6_000;
const stoppedMsMin = 150;
const stoppedMsMax = 400;
const runningMsMin = 20;
const runningMsMax = 60;
/** The reproduction: 0.3 s stopped, 0.03 s running, for 4–7 s (it used 6). */
const cutStoppedMs = 300;
const cutRunningMs = 30;
const cutStarveMsMin = 4_000;
const cutStarveMsMax = 7_000;

/**
 * Stop and continue member `x` in cycles until `forMs` have passed; it is left running whatever
 * happens (an abort included). Resolves with the number of cycles.
 */
async function starveFor(
  ctx: NemesisContext,
  x: number,
  forMs: number,
  stoppedMs: number,
  runningMs: number,
): Promise<number> {
  const c = ctx.members.cluster;
  const untilMs = performance.now() + forMs;
  let cycles = 0;
  try {
    while (performance.now() < untilMs) {
      await c.kill(x, 'SIGSTOP');
      await sleep(stoppedMs, ctx.signal);
      await c.kill(x, 'SIGCONT');
      await sleep(runningMs, ctx.signal);
      cycles++;
    }
  } finally {
    await c.kill(x, 'SIGCONT');
  }
  return cycles;
}

/** `starve`: one member, the leader half the time, starved for 2–6 s. */
export async function starve(ctx: NemesisContext): Promise<void> {
  const size = ctx.members.cluster.size;
  const leader = await currentLeader(ctx);
  const x = leader !== undefined && ctx.prng.chance(0.5) ? leader : ctx.prng.int(0, size);
  const forMs = uniform(ctx.prng, starveMsMin, starveMsMax);
  const stoppedMs = uniform(ctx.prng, stoppedMsMin, stoppedMsMax);
  const runningMs = uniform(ctx.prng, runningMsMin, runningMsMax);
  const name = ctx.members.names[x] ?? String(x);
  ctx.timeline.add(
    'starve',
    `${name}${x === leader ? ' (the leader)' : ''}: SIGSTOP ${stoppedMs.toFixed(0)} ms / ` +
      `SIGCONT ${runningMs.toFixed(0)} ms for ${forMs.toFixed(0)} ms`,
  );
  const cycles = await starveFor(ctx, x, forMs, stoppedMs, runningMs);
  ctx.timeline.add('heal', `SIGCONT ${name} after ${cycles} cycles`);
}

/**
 * `partition-leader-starved`: the leader's peer links cut both ways and the leader starved, then
 * both healed. What is verified is what must happen whatever the leader does: every cut link
 * drops SYNs and the others stop naming it. That it names no leader itself is not waited for: a
 * starved member answers Status only in its slivers, and one that counts timer callbacks may go
 * on believing it leads for the whole starvation (the bug this shape exists to expose).
 */
export async function partitionLeaderStarved(ctx: NemesisContext): Promise<void> {
  const { members, timeline: t } = ctx;
  const size = members.cluster.size;
  const lead = (await currentLeader(ctx)) ?? ctx.prng.int(0, size);
  const others = Array.from({ length: size }, (_, i) => i).filter((i) => i !== lead);
  const links: Link[] = others.flatMap((y) => [
    { from: lead, to: y },
    { from: y, to: lead },
  ]);
  const set = (xs: readonly number[]): string => `{${xs.map((x) => members.names[x]).join(',')}}`;
  const shape: Shape = {
    description: `leader ${set([lead])} isolated from ${set(others)} and starved`,
    links,
    leaderless: [],
    abandon: { leader: lead, by: others },
  };
  const forMs = uniform(ctx.prng, cutStarveMsMin, cutStarveMsMax);
  cut(links);
  let starving: Promise<number> | undefined;
  try {
    t.add(
      'partition-leader-starved',
      `${shape.description}: SIGSTOP ${cutStoppedMs} ms / SIGCONT ${cutRunningMs} ms for ` +
        `${forMs.toFixed(0)} ms`,
    );
    starving = starveFor(ctx, lead, forMs, cutStoppedMs, cutRunningMs);
    // Caught here so that a verification that throws (the run aborted) leaves no rejection
    // unhandled; the finally below still waits for it and so for the SIGCONT.
    starving.catch(() => undefined);
    const held = (await verifyLinks(ctx, links)) && (await verifyShape(ctx, shape));
    t.add('note', held ? 'cut verified' : 'cut NOT verified');
    const cycles = await starving;
    t.add('note', `starvation over after ${cycles} cycles`);
  } finally {
    await starving?.catch(() => undefined);
    restore(links);
    restoreAll();
    t.add('heal', `links restored, ${members.names[lead]} running`);
  }
}
