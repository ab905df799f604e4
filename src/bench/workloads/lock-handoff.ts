// e. Lock hand-off: 8 SDK clients (each its own connection and session, endpoints rotated so
// their preferred members differ) contend for one `Lock` with zero hold time. Hand-off latency =
// the previous holder's release start → the next holder's acquire resolved; cycles/s counts
// completed acquire → release cycles. An in-process holder check counts mutual-exclusion
// violations (expected 0). On PostgreSQL (`--vs postgres`) the 8 contenders are tenure/pg
// backends, each with its own pool (own connections) and session, driving PgLock the same way.
import { connect, Lock, type CallOptions, type Client, type Session } from '../../client/index.js';
import { lockClients, workloadTimeCapMs } from '../config.js';
import type { PgBackend } from '../../pg/index.js';
import type { Measurement, Workload, WorkloadContext } from './workload.js';

/** What the cycle loop needs of a lock: Lock and PgLock both have it. */
interface Contended {
  acquire(options: CallOptions): Promise<{ release(): Promise<boolean> }>;
}

/** Connections per PostgreSQL contender: its take/release statements, renewals, LISTEN. */
const pgPoolSize = 3;

async function etcdContenders(
  ctx: WorkloadContext,
  name: string,
): Promise<{ locks: Contended[]; cleanup(): Promise<void> }> {
  const clients: Client[] = [];
  const sessions: Session[] = [];
  for (let c = 0; c < lockClients; c++) {
    const client = await connect({
      endpoints: rotate(ctx.endpoints, c),
      ...(ctx.tls === undefined ? {} : { tls: ctx.tls }),
    });
    clients.push(client);
    sessions.push(await client.session({ ttlSeconds: sessionTtlSeconds }));
  }
  return {
    locks: sessions.map((s, c) => new Lock(clients[c] as Client, s, name)),
    cleanup: async () => {
      await Promise.allSettled(sessions.map((s) => s.close()));
      await Promise.allSettled(clients.map((c) => c.close()));
    },
  };
}

async function pgContenders(
  ctx: WorkloadContext,
  name: string,
): Promise<{ locks: Contended[]; cleanup(): Promise<void> }> {
  // Loaded only on PostgreSQL: it loads the pg driver.
  const { connectPg } = await import('../../pg/index.js');
  const backends: PgBackend[] = [];
  const sessions: Session[] = [];
  for (let c = 0; c < lockClients; c++) {
    const b = await connectPg({ connectionString: ctx.endpoints[0] ?? '', poolSize: pgPoolSize });
    backends.push(b);
    sessions.push(await b.session({ ttlSeconds: sessionTtlSeconds }));
  }
  return {
    locks: sessions.map((s, c) => {
      const b = backends[c];
      if (b === undefined) throw new Error('unreachable');
      return b.lock(s, name);
    }),
    cleanup: async () => {
      await Promise.allSettled(sessions.map((s) => s.close()));
      await Promise.allSettled(backends.map((b) => b.close()));
    },
  };
}

/** Session TTL of the contenders, in s. */
const sessionTtlSeconds = 10;

function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.map((_, i) => xs[(i + by) % xs.length] as T);
}

export const lockHandoff: Workload = {
  name: 'lock-handoff',
  title: `lock hand-off, ${lockClients} clients (SDK Lock)`,
  opName: 'cycle',
  latencyName: 'hand-off latency',
  cpuPerOp: true,
  postgres: true,
  async prepare(ctx) {
    const name = `k/l${ctx.tag}`;
    const contenders =
      ctx.kind === 'postgres' ? await pgContenders(ctx, name) : await etcdContenders(ctx, name);
    const locks = contenders.locks;
    // Warm-up: every contender takes the lock once.
    for (const lock of locks) await (await lock.acquire({})).release();

    const measure = async (): Promise<Measurement> => {
      const stop = new AbortController();
      const handoffsMs: number[] = [];
      const target = ctx.sizes.lockCycles;
      let cycles = 0;
      let errors = 0;
      let violations = 0;
      let holder: number | undefined;
      let releaseStartedAt: number | undefined;
      const started = performance.now();
      const timer = setTimeout(() => stop.abort(new Error('time cap')), workloadTimeCapMs);
      const contend = async (c: number, lock: Contended): Promise<void> => {
        while (!stop.signal.aborted) {
          let grant;
          try {
            grant = await lock.acquire({ signal: stop.signal });
          } catch {
            if (!stop.signal.aborted) errors++;
            continue;
          }
          const now = performance.now();
          if (holder !== undefined) violations++;
          holder = c;
          if (releaseStartedAt !== undefined) handoffsMs.push(now - releaseStartedAt);
          cycles++;
          if (cycles >= target) stop.abort(new Error('done'));
          holder = undefined;
          releaseStartedAt = performance.now();
          await grant.release().catch(() => void errors++);
        }
      };
      await Promise.all(locks.map((lock, c) => contend(c, lock)));
      clearTimeout(timer);
      const durationMs = performance.now() - started;
      return {
        ops: cycles,
        errors,
        durationMs,
        opsPerSec: cycles / (durationMs / 1000),
        latenciesMs: handoffsMs,
        extra: { violations },
      };
    };
    return { measure, cleanup: () => contenders.cleanup() };
  },
};
