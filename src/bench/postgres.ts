// PostgreSQL as a bench system (`tenure bench --vs postgres`): a throwaway server started the way
// the tests start one (src/pg/throwaway-server.ts: initdb in a temporary directory, a free
// 127.0.0.1 port, stopped by PID), for the workloads that run on tenure/pg (lock-handoff). It has
// one "member" and no members to kill; its CPU is not sampled (the work is done by backend
// processes the postmaster forks, which a PID's own counters do not include).
import { BenchSetupError } from './errors.js';
import type { MemberControl } from './workloads/index.js';

export interface BenchPostgres extends MemberControl {
  readonly endpoints: readonly string[];
  readonly pids: ReadonlyArray<number | undefined>;
  stop(): Promise<void>;
}

export async function startBenchPostgres(): Promise<BenchPostgres> {
  // Loaded only for `--vs postgres`: it imports the pg driver.
  const { startPostgres } = await import('../pg/throwaway-server.js');
  let server;
  try {
    server = await startPostgres({ database: 'tenure_bench' });
  } catch (e) {
    throw new BenchSetupError((e as Error).message);
  }
  const s = server;
  const noMembers = (): Promise<never> =>
    Promise.reject(new BenchSetupError('postgres: the bench has no members to kill or restart'));
  return {
    endpoints: [s.url],
    pids: [s.pid],
    kill: noMembers,
    restart: noMembers,
    waitReady: () => Promise.resolve(0),
    stop: () => s.stop(),
  };
}
