// What the fault classes share: who leads now, a uniform draw, and a bounded wait for a member's
// process to end. Kept apart from nemesis.ts so that the files of the fault classes and the
// nemesis that dispatches to them do not import each other.
import type { Prng } from '../core/base/prng.js';
import { sleep } from '../launcher/poll.js';
import { leaderSeenBy, probeAll } from './members.js';
import type { NemesisContext } from './nemesis.js';

const exitPollMs = 100;

/** The member every answering member names, if a majority of all agree. */
export async function currentLeader(ctx: NemesisContext): Promise<number | undefined> {
  const probes = await probeAll(ctx.members.cluster, ctx.signal);
  const votes = new Map<number, number>();
  for (const p of probes) {
    const l = leaderSeenBy(ctx.members, p);
    if (typeof l === 'number') votes.set(l, (votes.get(l) ?? 0) + 1);
  }
  for (const [l, n] of votes) if (n > probes.length / 2) return l;
  return undefined;
}

export function uniform(prng: Prng, lo: number, hi: number): number {
  return lo + prng.next() * (hi - lo);
}

/** A member other than `not` (the leader, say), drawn uniformly; any member if `not` is none. */
export function otherThan(prng: Prng, size: number, not: number | undefined): number {
  if (not === undefined) return prng.int(0, size);
  const x = prng.int(0, size - 1);
  return x >= not ? x + 1 : x;
}

/** Whether member i's process ended within `timeoutMs` (a hang guard, not a speed check). */
export async function exitedWithin(
  ctx: NemesisContext,
  i: number,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (ctx.members.cluster.pids[i] === undefined) return true;
    await sleep(exitPollMs, ctx.signal);
  }
  return ctx.members.cluster.pids[i] === undefined;
}
