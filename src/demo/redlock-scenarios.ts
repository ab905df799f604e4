// Redlock's side of the demo: the three failures its critics describe (Kleppmann 2016, "How to do
// distributed locking"; antirez 2016, "Is Redlock safe?"), each run against five real Redis
// servers with the maintained client. Redlock hands out no token, so the shared resource here is
// what a resource without a fence is: it writes what arrives. To count stale writes the DEMO (an
// observer that sees every grant) numbers the holders in the order their acquire returned, and
// stale-writes.ts judges the history with those numbers; the resource never sees them.
//
//   pausedHolder  A (a child process) takes the lock (TTL 1 s) on all five nodes, checks it is
//                 valid, and is frozen (SIGSTOP) before its write. Its keys expire, B takes the
//                 lock and writes; A is resumed (SIGCONT) and writes what it had decided: it lands.
//   clockJump     A reaches nodes 1–3 only (its links to 4–5 are cut: a silent TcpRelay) and takes the
//                 lock there (TTL 8 s). Node 3's wall clock jumps +60 s (wall-clock-shim.ts), so
//                 its key expires at once. B takes the lock on nodes 3–5: two clients each hold a
//                 majority, both by Redlock's own validity, and both write.
//   restart       As clockJump, but node 3 is killed -9 and restarted: without fsync (here no
//                 persistence at all, Redis's state between snapshots) it comes back empty and
//                 grants B the lock again.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sleep } from '../launcher/poll.js';
import { TcpRelay } from '../launcher/tcp-relay.js';
import type { HolderConfig, HolderMessage, HostOrder } from './redlock-holder.js';
import {
  newRedlock,
  redisClient,
  type RedisClient,
  type RedlockClass,
  type RedlockLibrary,
} from './redlock-lib.js';
import type { RedisNodes } from './redis-nodes.js';
import { checkHistory, type AcceptedWrite } from './stale-writes.js';
import type { Timeline } from './timeline.js';

// Named limits.
/** Client A's TTL in the paused-holder scenario: short, so the pause outlasts it quickly. */
export const pausedTtlMs = 1_000;
/** Client B's TTL, and A's in the majority scenarios: long enough to outlast each scenario. */
export const longTtlMs = 8_000;
/** How far node 3's wall clock jumps: far past longTtlMs. */
export const clockJumpMs = 60_000;
/** Pause between B's tries while A's keys have not expired yet. */
const retryPauseMs = 100;
/** A hang guard on B's tries and on each message from the child. */
const stepTimeoutMs = 15_000;
/** Setups tried before a scenario gives up (A must hold exactly nodes 1–3). */
export const setupAttemptsMax = 3;

const holderPath = fileURLToPath(new URL('./redlock-holder.js', import.meta.url));

export interface RedlockCounts {
  /** Writes the resource accepted from a holder after a later holder had written. */
  readonly staleWritesLanded: number;
  /** Moments at which two clients each held the lock (by Redlock's answer) or one wrote in another's tenure. */
  readonly overlaps: number;
  /** Setups tried (a setup whose precondition failed is tried again, never counted). */
  readonly setups: number;
}

export interface RedlockContext {
  readonly lib: RedlockLibrary;
  readonly nodes: RedisNodes;
  readonly timeline: Timeline;
  readonly run: string;
  readonly signal?: AbortSignal;
}

/** The unfenced resource: an append-only history of what it accepted. */
class PlainResource {
  readonly history: AcceptedWrite[] = [];
  write(writer: string, holder: bigint): void {
    this.history.push({ writer, token: holder, seq: this.history.length + 1 });
  }
}

async function connected(clients: readonly RedisClient[]): Promise<void> {
  await Promise.all(clients.map((c) => c.ping()));
}

function disconnect(clients: readonly RedisClient[]): void {
  for (const c of clients) c.disconnect();
}

/** Which node indexes (0-based) voted for the last attempt of `lock`. */
async function votedFor(
  lock: Awaited<ReturnType<RedlockClass['acquire']>>,
  clients: readonly RedisClient[],
): Promise<number[]> {
  const stats = await lock.attempts[lock.attempts.length - 1];
  const votes = stats?.votesFor ?? new Set();
  return clients.flatMap((c, i) => (votes.has(c) ? [i] : []));
}

// Redlock's validity is `lock.expiration`, which the library computes from Date.now() at the
// start of the acquire; the demo reads it the same way, as a Redlock user must, and measures no
// duration of its own with it.
const nodeList = (ix: readonly number[]): string => ix.map((i) => i + 1).join(',');

export async function pausedHolder(ctx: RedlockContext): Promise<RedlockCounts> {
  const t = ctx.timeline;
  const key = `tenure-demo/redlock/${ctx.run}/paused`;
  const resource = new PlainResource();
  const clientsB = ctx.nodes.ports.map((p) => redisClient(ctx.lib, p));
  const config: HolderConfig = { ports: ctx.nodes.ports, key, ttlMs: pausedTtlMs };
  const child = fork(holderPath, [JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const inbox: HolderMessage[] = [];
  const waiters: Array<(m: HolderMessage) => void> = [];
  child.on('message', (m: HolderMessage) => {
    const w = waiters.shift();
    if (w === undefined) inbox.push(m);
    else w(m);
  });
  const next = async (): Promise<HolderMessage> => {
    const queued = inbox.shift();
    const m =
      queued ??
      (await new Promise<HolderMessage>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('client A said nothing in time')),
          stepTimeoutMs,
        );
        waiters.push((x) => {
          clearTimeout(timer);
          resolve(x);
        });
      }));
    if (m.type === 'failed') throw new Error(`client A failed: ${m.message}`);
    return m;
  };
  const order = (m: HostOrder): void => {
    child.send(m);
  };
  let overlaps = 0;
  let frozen = false;
  try {
    await connected(clientsB);
    const redlockB = newRedlock(ctx.lib, clientsB);
    t.event('A', `started (pid ${child.pid}), takes the Redlock lock, TTL ${pausedTtlMs} ms`);
    const checked = await next();
    if (checked.type !== 'checked')
      throw new Error(`client A: expected checked, got ${checked.type}`);
    t.event(
      'A',
      `holds it on ${checked.votes}/5 nodes, valid for ${checked.validForMs} ms by its own ` +
        'check; about to write',
    );
    if (child.pid === undefined) throw new Error('client A has no pid');
    process.kill(child.pid, 'SIGSTOP');
    frozen = true;
    const frozenAt = t.elapsedMs();
    t.event('demo', `SIGSTOP A (pid ${child.pid}) between its check and its write: a GC pause`);
    order({ type: 'go' });
    const deadline = performance.now() + stepTimeoutMs;
    let lockB: Awaited<ReturnType<RedlockClass['acquire']>> | undefined;
    while (lockB === undefined) {
      try {
        lockB = await redlockB.acquire([key], longTtlMs);
      } catch {
        if (performance.now() > deadline) throw new Error('B never got the lock');
        await sleep(retryPauseMs, ctx.signal);
      }
    }
    t.event('B', `holds the lock (A's keys expired on every node), TTL ${longTtlMs} ms`);
    resource.write('B', 2n);
    t.event('B', 'writes: accepted');
    process.kill(child.pid, 'SIGCONT');
    frozen = false;
    t.event(
      'demo',
      `SIGCONT A after ${((t.elapsedMs() - frozenAt) / 1000).toFixed(2)} s frozen ` +
        `(its TTL: ${pausedTtlMs} ms)`,
    );
    const w = await next();
    if (w.type !== 'write') throw new Error(`client A: expected write, got ${w.type}`);
    resource.write('A', 1n);
    const bHolds = lockB.expiration > Date.now();
    if (bHolds) overlaps++;
    t.event('A', 'writes as it had decided: ACCEPTED (a stale write: B holds the lock)');
    t.note(
      `had A checked again, Redlock would have said valid=${w.validByOwnClock}; a check cannot ` +
        'close the gap, a pause can follow any check. No token exists for the resource to refuse.',
    );
    order({ type: 'exit' });
    await redlockB.release(lockB).catch(() => undefined);
  } finally {
    if (frozen && child.pid !== undefined) process.kill(child.pid, 'SIGCONT');
    if (child.exitCode === null && child.pid !== undefined) child.kill('SIGKILL');
    disconnect(clientsB);
  }
  const verdict = checkHistory(resource.history);
  return { staleWritesLanded: verdict.staleWrites.length, overlaps, setups: 1 };
}

/** The fault on node 3 for a majority scenario; resolves once it has taken (measured). */
type NodeFault = (key: string) => Promise<void>;

interface MajorityOptions {
  readonly name: string;
  readonly fault: NodeFault;
  readonly heal: () => Promise<void>;
}

/** clockJump and restart: A on nodes 1–3, a fault on node 3, B on nodes 3–5. */
async function majorityTwice(ctx: RedlockContext, o: MajorityOptions): Promise<RedlockCounts> {
  const t = ctx.timeline;
  const ports = ctx.nodes.ports;
  for (let setup = 1; setup <= setupAttemptsMax; setup++) {
    const key = `tenure-demo/redlock/${ctx.run}/${o.name}/${setup}`;
    const resource = new PlainResource();
    const links = await Promise.all([3, 4].map((i) => TcpRelay.open(`127.0.0.1:${ports[i] ?? 0}`)));
    const clientsA = [
      ...ports.slice(0, 3).map((p) => redisClient(ctx.lib, p)),
      ...links.map((l) => redisClient(ctx.lib, l.port)),
    ];
    const clientsB = ports.map((p) => redisClient(ctx.lib, p));
    try {
      await connected([...clientsA, ...clientsB]);
      for (const l of links) l.drop();
      t.event('demo', 'cut client A off from nodes 4 and 5 (a network partition)');
      const redlockA = newRedlock(ctx.lib, clientsA);
      const redlockB = newRedlock(ctx.lib, clientsB);
      const lockA = await redlockA.acquire([key], longTtlMs);
      const votesA = await votedFor(lockA, clientsA);
      if (nodeList(votesA) !== '1,2,3') {
        t.event('demo', `A got nodes ${nodeList(votesA)}, not 1–3: set up again`);
        await redlockA.release(lockA).catch(() => undefined);
        continue;
      }
      t.event(
        'A',
        `holds the lock on nodes 1,2,3 (a majority), TTL ${longTtlMs} ms, valid for ` +
          `${lockA.expiration - Date.now()} ms`,
      );
      await o.fault(key);
      let lockB: Awaited<ReturnType<RedlockClass['acquire']>>;
      try {
        lockB = await redlockB.acquire([key], longTtlMs);
      } catch (e) {
        t.event('B', `could not take the lock: ${e instanceof Error ? e.message : String(e)}`);
        await redlockA.release(lockA).catch(() => undefined);
        return { staleWritesLanded: 0, overlaps: 0, setups: setup };
      }
      const votesB = await votedFor(lockB, clientsB);
      const aValid = lockA.expiration > Date.now();
      const bValid = lockB.expiration > Date.now();
      t.event('B', `holds the lock on nodes ${nodeList(votesB)} (a majority)`);
      const overlaps = aValid && bValid ? 1 : 0;
      t.note(
        `by Redlock's own answer A valid=${aValid}, B valid=${bValid}: ` +
          (overlaps === 1 ? 'TWO HOLDERS AT ONCE' : 'one holder'),
      );
      resource.write('B', 2n);
      t.event('B', 'writes: accepted');
      if (lockA.expiration > Date.now()) {
        resource.write('A', 1n);
        t.event('A', 'checks its lock (valid), writes: ACCEPTED (a stale write: B holds the lock)');
      }
      await Promise.all([
        redlockA.release(lockA).catch(() => undefined),
        redlockB.release(lockB).catch(() => undefined),
      ]);
      const verdict = checkHistory(resource.history);
      return { staleWritesLanded: verdict.staleWrites.length, overlaps, setups: setup };
    } finally {
      await o.heal();
      disconnect([...clientsA, ...clientsB]);
      await Promise.all(links.map((l) => l.close()));
    }
  }
  throw new Error(`${o.name}: A never held exactly nodes 1–3 in ${setupAttemptsMax} setups`);
}

/** Node 3 has no key `key` (PTTL −2): what the fault must have achieved before B tries. */
async function node3Forgot(ctx: RedlockContext, key: string): Promise<boolean> {
  const probe = redisClient(ctx.lib, ctx.nodes.ports[2] ?? 0);
  try {
    return (await probe.pttl(key)) === -2;
  } finally {
    probe.disconnect();
  }
}

export function clockJump(ctx: RedlockContext): Promise<RedlockCounts> {
  return majorityTwice(ctx, {
    name: 'clock-jump',
    fault: async (key) => {
      ctx.nodes.setClockOffsetMs(2, clockJumpMs);
      const gone = await node3Forgot(ctx, key);
      ctx.timeline.event(
        'node-3',
        `wall clock jumps +${clockJumpMs / 1000} s; A's key there: ` +
          (gone ? 'EXPIRED (Redis expiry follows the wall clock)' : 'still there'),
      );
    },
    heal: () => {
      ctx.nodes.setClockOffsetMs(2, 0);
      return Promise.resolve();
    },
  });
}

export function restart(ctx: RedlockContext): Promise<RedlockCounts> {
  return majorityTwice(ctx, {
    name: 'restart',
    fault: async (key) => {
      const pid = ctx.nodes.pids[2];
      await ctx.nodes.kill9(2);
      await ctx.nodes.restart(2, ctx.signal);
      const gone = await node3Forgot(ctx, key);
      ctx.timeline.event(
        'node-3',
        `kill -9 (pid ${pid}), restarted (pid ${ctx.nodes.pids[2]}) with no fsynced state; ` +
          `A's key there: ${gone ? 'FORGOTTEN' : 'still there'}`,
      );
    },
    heal: () => Promise.resolve(),
  });
}
