// tenure's side of the Redlock demo: the same three faults against a 3-member tenure cluster, with
// Lock from the SDK and a fence at the resource (src/fence). What differs is where safety comes
// from: every grant carries a fencing token (the lock key's revision, ordered by the Raft log,
// not by any clock), the resource refuses a token lower than one it has seen, leases are timed
// by the leader's monotonic clock, and a write is acknowledged only once a majority has it in an
// fsynced WAL.
//
//   pausedHolder  split-brain.ts's scenario with a fenced record store: the frozen holder's late
//                 write is refused with StaleTokenError.
//   clockJump     Every member runs under libfaketime (as `tenure chaos` does, src/chaos/faults-clock.ts: the wall clock
//                 only, FAKETIME_DONT_FAKE_MONOTONIC=1). A holds the lock, B waits for it, and the
//                 members' wall clocks jump +1 h, leader included. B must not be granted before
//                 A releases.
//   restart       A holds the lock, B waits; two of the three members (the leader among them) are
//                 killed -9 and restarted, so the lock can only survive through their WALs. B must
//                 not be granted before A releases.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, Lock, type Client, type LockGrant } from '../client/index.js';
import { MemoryFence, StaleTokenError } from '../fence/index.js';
import type { Cluster } from '../launcher/cluster.js';
import { faketimeLibraryName, findFaketimeLibrary } from '../launcher/faketime.js';
import { sleep } from '../launcher/poll.js';
import { DemoSetupError } from './redis-errors.js';
import { FileRecordStore } from './record-store.js';
import { runScenario } from './split-brain.js';
import type { Timeline } from './timeline.js';

// Named limits.
/** Lease TTL of the holders' sessions (the server's minimum is 2). */
export const tenureTtlSeconds = 2;
/** Lease TTL in the restart scenario: outlasts the re-election after two members are killed. */
const restartTtlSeconds = 5;
/** How far the members' wall clocks jump. */
export const tenureClockJumpSeconds = 3_600;
/** How long A keeps the lock after the fault: several lease TTLs. */
const holdAfterFaultMs = 6_000;
/** A hang guard on one acquire, on top of the hold. */
const acquireSlackMs = 30_000;
/** A hang guard for the cluster to be ready again after the restarts. */
const readyAgainTimeoutMs = 30_000;
/** `date` under the members' environment against ours may differ this much, seconds. */
const jumpToleranceSeconds = 5;

export interface TenureCounts {
  readonly staleWritesRejected: number;
  readonly staleWritesLanded: number;
  readonly overlaps: number;
}

/** The environment every member of the demo's cluster runs with: a wall clock the demo moves. */
export function clockJumpEnv(dir: string): { env: Record<string, string>; file: string } {
  const library = findFaketimeLibrary();
  if (library === undefined) {
    throw new DemoSetupError(
      `tenure's clock-jump scenario needs ${faketimeLibraryName} from Debian's faketime ` +
        'package: apt-get install -y faketime',
    );
  }
  const file = join(dir, 'faketime-offset');
  writeFileSync(file, '+0\n');
  return {
    file,
    env: {
      LD_PRELOAD: library,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  };
}

export interface TenureContext {
  readonly cluster: Cluster;
  readonly clock: { readonly env: Record<string, string>; readonly file: string };
  readonly dir: string;
  readonly timeline: Timeline;
  readonly run: string;
  readonly signal?: AbortSignal;
}

export async function tenurePausedHolder(ctx: TenureContext): Promise<TenureCounts> {
  const store = await FileRecordStore.open(join(ctx.dir, 'paused-record'), true);
  try {
    const r = await runScenario({
      endpoints: ctx.cluster.endpoints,
      store,
      lockName: `tenure-demo/redlock/${ctx.run}/paused`,
      ttlSeconds: tenureTtlSeconds,
      parts: 2,
      timeline: ctx.timeline,
      ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
    });
    return {
      staleWritesRejected: r.staleWritesRejected,
      staleWritesLanded: r.staleWritesAccepted,
      overlaps: r.staleWritesAccepted + r.interleavings,
    };
  } finally {
    await store.close();
  }
}

/** Seconds a process under `env` sees its wall clock ahead of ours. */
function offsetSeenSeconds(env: Record<string, string>): number {
  const out = execFileSync('date', ['+%s'], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return Number(out.trim()) - Date.now() / 1000;
}

/** A holds, B waits, `fault` strikes, A holds on, writes and releases; then B. */
async function holdThrough(
  ctx: TenureContext,
  name: string,
  ttlSeconds: number,
  fault: () => Promise<void>,
): Promise<TenureCounts> {
  const t = ctx.timeline;
  const lockName = `tenure-demo/redlock/${ctx.run}/${name}`;
  const fence = new MemoryFence();
  let rejected = 0;
  let landed = 0;
  let highest = 0n;
  const write = async (who: string, g: LockGrant): Promise<void> => {
    try {
      await fence.write('record', g.token, () => undefined);
      if (g.token < highest) landed++;
      if (g.token > highest) highest = g.token;
      t.event(who, `writes with token ${g.token}: accepted`);
    } catch (e) {
      if (!(e instanceof StaleTokenError)) throw e;
      rejected++;
      t.event(who, `writes with token ${g.token}: REJECTED (${e.code}, current ${e.current})`);
    }
  };
  const clients: Client[] = [];
  try {
    const a = await connect({ endpoints: ctx.cluster.endpoints });
    clients.push(a);
    const b = await connect({ endpoints: ctx.cluster.endpoints });
    clients.push(b);
    const sessionA = await a.session({ ttlSeconds });
    const grantA = await new Lock(a, sessionA, lockName).acquire({ timeoutMs: acquireSlackMs });
    t.event('A', `holds the lock: token ${grantA.token}, lease TTL ${ttlSeconds} s`);
    await write('A', grantA);
    const sessionB = await b.session({ ttlSeconds });
    let aReleased = false;
    let overlaps = 0;
    const pendingB = new Lock(b, sessionB, lockName)
      .acquire({ timeoutMs: holdAfterFaultMs + acquireSlackMs * 2 })
      .then((g) => {
        const aHolds = !aReleased && !grantA.signal.aborted;
        if (aHolds) overlaps++;
        t.event('B', `holds the lock: token ${g.token}${aHolds ? ' — WHILE A HOLDS IT' : ''}`);
        return g;
      });
    t.event('B', 'waits for the lock');
    await fault();
    await sleep(holdAfterFaultMs, ctx.signal);
    t.event(
      'A',
      grantA.signal.aborted
        ? 'its SDK says the lock is lost (lease expired): it stops'
        : `still holds the lock ${holdAfterFaultMs / 1000} s after the fault`,
    );
    await write('A', grantA);
    aReleased = true;
    await grantA.release().catch(() => false);
    t.event('A', 'releases');
    const grantB = await pendingB;
    await write('B', grantB);
    await grantB.release().catch(() => false);
    await Promise.all([sessionA.close(), sessionB.close()].map((p) => p.catch(() => undefined)));
    return { staleWritesRejected: rejected, staleWritesLanded: landed, overlaps };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

export function tenureClockJump(ctx: TenureContext): Promise<TenureCounts> {
  return holdThrough(ctx, 'clock-jump', tenureTtlSeconds, () => {
    writeFileSync(ctx.clock.file, `+${tenureClockJumpSeconds}\n`);
    const seen = offsetSeenSeconds(ctx.clock.env);
    const took = Math.abs(seen - tenureClockJumpSeconds) <= jumpToleranceSeconds;
    ctx.timeline.event(
      'cluster',
      `every member's wall clock jumps +${tenureClockJumpSeconds} s (probe: ` +
        `${seen.toFixed(0)} s${took ? '' : ', DID NOT TAKE'})`,
    );
    if (!took) {
      return Promise.reject(new Error(`the faketime offset did not take: a probe saw ${seen} s`));
    }
    return Promise.resolve();
  }).finally(() => writeFileSync(ctx.clock.file, '+0\n'));
}

export function tenureRestart(ctx: TenureContext): Promise<TenureCounts> {
  return holdThrough(ctx, 'restart', restartTtlSeconds, async () => {
    const c = ctx.cluster;
    const leader = await c.waitReady(
      readyAgainTimeoutMs,
      ctx.signal === undefined ? {} : { signal: ctx.signal },
    );
    const victims = [leader, (leader + 1) % c.size];
    const pids = victims.map((i) => c.pids[i]);
    await Promise.all(victims.map((i) => c.kill(i, 'SIGKILL')));
    ctx.timeline.event(
      'cluster',
      `kill -9 ${victims.map((i) => c.names[i]).join(' and ')} (the leader among them; pids ` +
        `${pids.join(', ')}): a majority down, the lock lives only in their WALs now`,
    );
    await Promise.all(victims.map((i) => c.restart(i, ctx.clock.env)));
    await c.waitReady(readyAgainTimeoutMs, ctx.signal === undefined ? {} : { signal: ctx.signal });
    ctx.timeline.event(
      'cluster',
      `restarted (pids ${victims.map((i) => c.pids[i]).join(', ')}); the cluster is ready again`,
    );
  });
}
