// What an open dashboard costs the leader (scripts/dashboard-cost.mjs runs it; not part of npm
// test): a local 3-member cluster under the bench's put load, with and without one dashboard
// on the leader — the page's event stream (GET /ui/api/events, read to the end) and its state
// refetch every 5 s (GET /ui/api/state) — and the leader's CPU time over each phase from
// /proc (proc-stats.ts), as % of one core. Three loads: idle, puts at a fixed rate, and the
// bench's put-throughput (64 in flight, which saturates the leader: there the cost shows as
// fewer puts per second at the same CPU). Phases alternate with and without, round after round,
// so that drift on a shared machine falls on both.
import * as http from 'node:http';
import { startCluster } from '../launcher/cluster.js';
import { poolClient } from './etcd3-clients.js';
import { cpuTicks, ticksPerSecond } from './proc-stats.js';
import { key, randomValue } from './workloads/keys.js';

export interface DashboardCostOptions {
  /** How long each phase measures, in ms. */
  readonly phaseMs: number;
  readonly rounds: number;
  /** Puts per second of the paced load. */
  readonly pacedPutsPerSec: number;
  readonly log: (line: string) => void;
}

export const DASHBOARD_COST_DEFAULTS: DashboardCostOptions = {
  phaseMs: 15_000,
  rounds: 2,
  pacedPutsPerSec: 500,
  log: (line) => process.stderr.write(`${line}\n`),
};

/** The page's refetch interval (ui/app.js STATE_REFRESH_MS). */
const STATE_REFRESH_MS = 5000;
/** Puts in flight of the saturating load (the bench's `inflight`). */
const SATURATING_INFLIGHT = 64;
/** Puts in flight at most under the paced load: beyond it the rate is not being met. */
const PACED_INFLIGHT_MAX = 256;
/** The paced load's tick, in ms. */
const PACED_TICK_MS = 10;

export type Load = 'idle' | 'paced' | 'saturating';

export interface PhaseResult {
  readonly load: Load;
  readonly dashboard: boolean;
  readonly round: number;
  readonly leaderCpuPercent: number;
  readonly putsPerSec: number;
  /** The leader's CPU time per put, in µs; null without puts. */
  readonly leaderCpuUsPerPut: number | null;
  /** What the dashboard client received over the phase. */
  readonly eventBytes: number;
  readonly stateFetches: number;
}

export interface DashboardCost {
  readonly phases: readonly PhaseResult[];
  /** Per load: the median leader CPU % and puts/s without and with a dashboard. */
  readonly summary: readonly {
    readonly load: Load;
    readonly withoutCpuPercent: number;
    readonly withCpuPercent: number;
    readonly withoutPutsPerSec: number;
    readonly withPutsPerSec: number;
    readonly withoutCpuUsPerPut: number | null;
    readonly withCpuUsPerPut: number | null;
  }[];
}

/** One emulated open dashboard: the event stream, and the state every STATE_REFRESH_MS. */
function openDashboard(base: string): { stop(): { eventBytes: number; stateFetches: number } } {
  let eventBytes = 0;
  let stateFetches = 0;
  const agent = new http.Agent({ keepAlive: true });
  const sse = http.get(`${base}/ui/api/events`, { agent }, (res) => {
    res.on('data', (c: Buffer) => (eventBytes += c.length));
    res.on('error', () => undefined);
  });
  sse.on('error', () => undefined);
  const fetchState = (): void => {
    http
      .get(`${base}/ui/api/state`, { agent }, (res) => {
        res.resume();
        res.on('end', () => stateFetches++);
      })
      .on('error', () => undefined);
  };
  fetchState();
  const timer = setInterval(fetchState, STATE_REFRESH_MS);
  return {
    stop: () => {
      clearInterval(timer);
      sse.destroy();
      agent.destroy();
      return { eventBytes, stateFetches };
    },
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1
    ? (s[mid] as number)
    : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export async function measureDashboardCost(
  options: Partial<DashboardCostOptions> = {},
): Promise<DashboardCost> {
  const o = { ...DASHBOARD_COST_DEFAULTS, ...options };
  const cluster = await startCluster({ kind: 'tenure', size: 3, logs: 'ring' });
  const client = poolClient(cluster.endpoints);
  const value = randomValue();
  let seq = 0;
  const put = (): Promise<unknown> =>
    client
      .put(key('d', 'ash', seq++))
      .value(value)
      .exec();
  try {
    const leader = await cluster.waitReady();
    const pid = cluster.pids[leader];
    const base = cluster.endpoints[leader];
    if (pid === undefined || base === undefined) throw new Error('the leader has no PID');
    o.log(`leader ${cluster.names[leader]} pid ${pid} at ${base}`);
    // Warm up the client, the cluster and the JIT outside every measured phase.
    for (let i = 0; i < 2000; i += SATURATING_INFLIGHT)
      await Promise.all(Array.from({ length: SATURATING_INFLIGHT }, put));

    const runLoad = async (load: Load, ms: number): Promise<number> => {
      let done = 0;
      const end = Date.now() + ms;
      if (load === 'idle') {
        await new Promise((r) => setTimeout(r, ms));
        return 0;
      }
      if (load === 'saturating') {
        await Promise.all(
          Array.from({ length: SATURATING_INFLIGHT }, async () => {
            while (Date.now() < end) {
              await put().catch(() => undefined);
              done++;
            }
          }),
        );
        return done;
      }
      let inflight = 0;
      let owed = 0;
      await new Promise<void>((resolve) => {
        const t = setInterval(() => {
          if (Date.now() >= end) {
            clearInterval(t);
            resolve();
            return;
          }
          owed += (o.pacedPutsPerSec * PACED_TICK_MS) / 1000;
          for (; owed >= 1 && inflight < PACED_INFLIGHT_MAX; owed--) {
            inflight++;
            void put()
              .catch(() => undefined)
              .finally(() => {
                inflight--;
                done++;
              });
          }
        }, PACED_TICK_MS);
      });
      return done;
    };

    const phases: PhaseResult[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      for (const load of ['idle', 'paced', 'saturating'] as const) {
        // Alternate which goes first, so that a trend on the machine is shared by both.
        const order = round % 2 === 1 ? [false, true] : [true, false];
        for (const dashboard of order) {
          const board = dashboard ? openDashboard(base) : undefined;
          // Let the stream open and the first state be served before the phase counts.
          await new Promise((r) => setTimeout(r, 500));
          const t0 = cpuTicks(pid);
          const started = performance.now();
          const puts = await runLoad(load, o.phaseMs);
          const seconds = (performance.now() - started) / 1000;
          const t1 = cpuTicks(pid);
          const got = board?.stop() ?? { eventBytes: 0, stateFetches: 0 };
          if (t0 === undefined || t1 === undefined) throw new Error('the leader exited');
          const r: PhaseResult = {
            load,
            dashboard,
            round,
            leaderCpuPercent: ((t1 - t0) / ticksPerSecond() / seconds) * 100,
            putsPerSec: puts / seconds,
            leaderCpuUsPerPut: puts === 0 ? null : (((t1 - t0) / ticksPerSecond()) * 1e6) / puts,
            ...got,
          };
          phases.push(r);
          o.log(
            `round ${round} ${load.padEnd(10)} dashboard ${dashboard ? 'open  ' : 'closed'}: ` +
              `leader CPU ${r.leaderCpuPercent.toFixed(1)} % of a core, ` +
              `${r.putsPerSec.toFixed(0)} puts/s` +
              (r.leaderCpuUsPerPut === null ? '' : ` (${r.leaderCpuUsPerPut.toFixed(0)} µs/put)`) +
              (dashboard ? `, ${r.eventBytes} event bytes, ${r.stateFetches} state fetches` : ''),
          );
        }
      }
    }
    const perPut = (p: PhaseResult): number => p.leaderCpuUsPerPut ?? 0;
    const summary = (['idle', 'paced', 'saturating'] as const).map((load) => {
      const of = (d: boolean): PhaseResult[] =>
        phases.filter((p) => p.load === load && p.dashboard === d);
      return {
        load,
        withoutCpuPercent: median(of(false).map((p) => p.leaderCpuPercent)),
        withCpuPercent: median(of(true).map((p) => p.leaderCpuPercent)),
        withoutPutsPerSec: median(of(false).map((p) => p.putsPerSec)),
        withPutsPerSec: median(of(true).map((p) => p.putsPerSec)),
        withoutCpuUsPerPut: load === 'idle' ? null : median(of(false).map(perPut)),
        withCpuUsPerPut: load === 'idle' ? null : median(of(true).map(perPut)),
      };
    });
    return { phases, summary };
  } finally {
    client.close();
    await cluster.stop();
  }
}

/** The summary as a Markdown table. */
export function dashboardCostTable(c: DashboardCost, pacedPutsPerSec: number): string {
  const us = (v: number | null): string => (v === null ? '-' : v.toFixed(0));
  const name = (l: Load): string =>
    l === 'idle'
      ? 'idle'
      : l === 'paced'
        ? `${pacedPutsPerSec} puts/s`
        : `put-throughput (${SATURATING_INFLIGHT} in flight)`;
  return [
    '| load | leader CPU, no dashboard | leader CPU, one dashboard | puts/s without | ' +
      'puts/s with | leader CPU µs/put without | with |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...c.summary.map(
      (s) =>
        `| ${name(s.load)} | ${s.withoutCpuPercent.toFixed(1)} % | ` +
        `${s.withCpuPercent.toFixed(1)} % | ` +
        `${s.withoutPutsPerSec.toFixed(0)} | ${s.withPutsPerSec.toFixed(0)} | ` +
        `${us(s.withoutCpuUsPerPut)} | ${us(s.withCpuUsPerPut)} |`,
    ),
  ].join('\n');
}
