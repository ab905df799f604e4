// lock-failover (issue 19): a Lock holder in its own process (lock-holder-child.js, SDK Lock,
// session TTL `lockFailoverTtlSeconds`) holds the lock while a waiter in the bench process (SDK
// Lock, own client over every endpoint, same TTL) queues behind it. The holder is killed with
// SIGKILL, and the Raft leader with SIGKILL a uniformly random 0–TTL/3 later, while the holder's
// lease runs down: the lease must still expire on time on the new leader (etcd's lessor promotes
// leases with a fresh TTL on a new leader, lease/lessor.go Promote, which is why etcd's figure
// can reach 2 × TTL). The sample is the time from the holder's kill to the waiter's grant; the
// target is TTL + `lockFailoverSlackMs`. The killed leader is restarted before the next sample.
import { fileURLToPath } from 'node:url';
import { connect, Lock, type RecipeTraceEvent } from '../../client/index.js';
import {
  electionGiveUpTtls,
  lockFailoverLeaderKillMaxFraction,
  lockFailoverSlackMs,
  lockFailoverTtlSeconds,
  readyTimeoutMs,
} from '../config.js';
import { leaderIndex, statuses } from '../leader.js';
import { pollUntil } from '../../launcher/poll.js';
import { exited, running, stopProcess } from '../../launcher/processes.js';
import { restartDownMembers } from './repair.js';
import { spawnRecipeChild } from './recipe-child.js';
import { sampledWorkload } from './samples.js';
import type { Workload, WorkloadContext } from './workload.js';

const childScript = fileURLToPath(new URL('../lock-holder-child.js', import.meta.url));
/** How long the child may take to start and hold, in ms. */
const childHoldTimeoutMs = 20_000;
const pollMs = 10;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function until(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  return pollUntil(what, cond, { timeoutMs, intervalMs: pollMs });
}

async function oneLockFailover(ctx: WorkloadContext, sample: number): Promise<number> {
  const ttlMs = lockFailoverTtlSeconds * 1000;
  const name = `k/x${ctx.tag}/${sample}`;
  const holder = spawnRecipeChild(
    childScript,
    ctx,
    name,
    [String(lockFailoverTtlSeconds)],
    '"held"',
  );
  const client = await connect({
    endpoints: ctx.endpoints,
    ...(ctx.tls === undefined ? {} : { tls: ctx.tls }),
  });
  const stop = new AbortController();
  let grantedAt: number | undefined;
  let waitError: Error | undefined;
  const events: RecipeTraceEvent[] = [];
  let leader: number | undefined;
  try {
    const session = await client.session({ ttlSeconds: lockFailoverTtlSeconds });
    await until(
      'the holder to hold the lock',
      () => {
        if (!running(holder.child)) throw new Error(`lock holder exited: ${holder.stderr()}`);
        return holder.ready();
      },
      childHoldTimeoutMs,
    );
    const lock = new Lock(client, session, name, { trace: (e) => events.push(e) });
    // Bounded past the give-up below, so the poll reports the failure, not the call.
    const waitBoundMs = ttlMs * (electionGiveUpTtls + 1) + childHoldTimeoutMs;
    const waiting = lock.acquire({ signal: stop.signal, timeoutMs: waitBoundMs }).then(
      (grant) => {
        grantedAt = performance.now();
        return grant;
      },
      (e: unknown) => {
        waitError = e instanceof Error ? e : new Error(String(e));
        return undefined;
      },
    );
    await until(
      'the waiter to queue',
      () => {
        if (waitError !== undefined) throw new Error(`the waiter failed: ${waitError.message}`);
        return events.some((e) => e.type === 'watch-predecessor');
      },
      childHoldTimeoutMs,
    );
    leader = leaderIndex(await statuses(ctx.endpoints, ctx.tls));
    if (leader === undefined) throw new Error('no agreed leader before the kills');
    const pid = holder.child.pid;
    if (pid === undefined) throw new Error('the lock holder has no pid');
    const offsetMs = Math.random() * ttlMs * lockFailoverLeaderKillMaxFraction;
    const killedAt = performance.now();
    process.kill(pid, 'SIGKILL');
    await exited(holder.child);
    await sleep(Math.max(0, offsetMs - (performance.now() - killedAt)));
    await ctx.members.kill(leader, 'SIGKILL');
    await until(
      'the waiter to be granted',
      () => {
        if (waitError !== undefined) throw new Error(`the waiter failed: ${waitError.message}`);
        return grantedAt !== undefined;
      },
      ttlMs * electionGiveUpTtls,
    );
    const grant = await waiting;
    await grant?.release().catch(() => undefined);
    await session.close().catch(() => undefined);
    return (grantedAt as number) - killedAt;
  } finally {
    stop.abort(new Error('sample over'));
    await stopProcess(holder.child);
    await client.close();
    if (leader !== undefined && ctx.pids[leader] === undefined) {
      await ctx.members.restart(leader);
      await ctx.members.waitReady(readyTimeoutMs);
    }
  }
}

export const lockFailover: Workload = {
  name: 'lock-failover',
  title:
    `lock holder kill -9, then leader kill -9 → waiter granted (SDK Lock, TTL ` +
    `${lockFailoverTtlSeconds} s, target TTL + ${lockFailoverSlackMs / 1000} s)`,
  opName: 'failover',
  latencyName: 'grant time',
  cpuPerOp: false,
  extraRows: [
    { key: 'ttlMs', label: 'session TTL, ms', better: 'lower' },
    { key: 'targetMs', label: 'target (TTL + 0.5 s), ms', better: 'lower' },
    { key: 'overTarget', label: 'samples over the target', better: 'lower' },
  ],
  async prepare(ctx) {
    const targetMs = lockFailoverTtlSeconds * 1000 + lockFailoverSlackMs;
    const prepared = await sampledWorkload(
      'lock failover',
      ctx.sizes.lockFailoverSamples,
      async (s) => {
        const ms = await oneLockFailover(ctx, s);
        return { ms, extra: { overTarget: ms > targetMs ? 1 : 0 } };
      },
      () => restartDownMembers(ctx),
      ['overTarget'],
    );
    return {
      async measure() {
        const m = await prepared.measure();
        return {
          ...m,
          extra: { ...m.extra, ttlMs: lockFailoverTtlSeconds * 1000, targetMs },
        };
      },
      cleanup: () => prepared.cleanup(),
    };
  },
};
