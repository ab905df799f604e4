// `tenure bench`: start a fresh 3-member cluster of each system per round (alternating which goes
// first), run every workload against it with the same client, sample the members' CPU and peak
// RSS around each measured phase, stop the cluster by PID, and summarize medians and ratios.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BenchSetupError, BenchUsageError } from './errors.js';
import { fullSizes, quickSizes, type BenchSizes } from './config.js';
import {
  requireEtcd,
  startBenchCluster,
  timingOf,
  type RaftTiming,
  type SystemKind,
} from './cluster.js';
import { startBenchPostgres } from './postgres.js';
import { pidsStarted, stopAll } from '../launcher/processes.js';
import { warmUpCluster } from './warmup.js';
import { describeMachine, finishMachine } from './machine.js';
import { cpuMicrosBetween, peakRssMiB, snapshotCpu } from './proc-stats.js';
import { Progress } from '../render/progress.js';
import { renderMarkdown } from './report-markdown.js';
import { renderSvg } from './report-svg.js';
import { renderTable } from './report-table.js';
import { workloadResult, type BenchResult, type RunRecord } from './result.js';
import { summarizeLatencies } from './stats.js';
import type { BenchTls } from './tls.js';
import {
  allWorkloads,
  defaultWorkloads,
  workloadGroups,
  type Workload,
  type WorkloadContext,
} from './workloads/index.js';

export interface BenchOptions {
  /** Also run etcd and report ratios. */
  readonly vsEtcd: boolean;
  /**
   * With vsEtcd: the Raft timings etcd runs with, each as a system of its own: 'default' (etcd
   * 'etcd', 100/1000 ms) and '50/500' (system 'etcd-50/500'). Default: ['default'].
   */
  readonly etcdTimings?: readonly EtcdTiming[];
  /** Also run PostgreSQL through tenure/pg (workloads that support it; others are skipped). */
  readonly vsPostgres?: boolean;
  readonly quick: boolean;
  /** Rounds; default 3 (1 with `quick`). */
  readonly rounds?: number;
  /** Print only the JSON result on stdout. */
  readonly json: boolean;
  /** Write result.json, report.md and SVG charts here. */
  readonly outDir?: string;
  /** Run only these workloads (by name). */
  readonly workloads?: readonly string[];
  /** Extra `node` arguments for the tenure members (profiling). */
  readonly memberNodeArgs?: readonly string[];
  /**
   * Both systems' members on https:// client and peer URLs with client certificates required,
   * from a throwaway CA made for this run (as `tenure up --tls`); every client presents it.
   */
  readonly tls?: BenchTls;
  /** The command line, for the report. */
  readonly command: string;
}

/** The `--etcd-timing` values. */
export const etcdTimings = ['default', '50/500'] as const;
export type EtcdTiming = (typeof etcdTimings)[number];

function selectWorkloads(names: readonly string[] | undefined): readonly Workload[] {
  if (names === undefined || names.length === 0) return defaultWorkloads;
  const known = new Map(allWorkloads.map((w) => [w.name, w]));
  const selected = names.flatMap((n) => {
    const group = workloadGroups[n];
    if (group !== undefined) return group;
    const w = known.get(n);
    if (w === undefined) {
      const all = [...allWorkloads.map((x) => x.name), ...Object.keys(workloadGroups)].join(', ');
      throw new BenchUsageError(`unknown workload ${JSON.stringify(n)}; known: ${all}`);
    }
    return [w];
  });
  return [...new Set(selected)];
}

function etcdSystems(timings: readonly EtcdTiming[]): SystemKind[] {
  if (timings.length === 0) throw new BenchUsageError('--etcd-timing names no timing');
  return [...new Set(timings)].map((t) => (t === 'default' ? 'etcd' : 'etcd-50/500'));
}

const fmt = (v: number | null, unit: string): string =>
  v === null ? '–' : `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${unit}`;

function oneLine(w: Workload, r: RunRecord): string {
  if (r.error !== undefined) return `FAILED: ${r.error}`;
  const rate = r.opsPerSec === null ? '' : `${fmt(r.opsPerSec, `${w.opName}s/s`)}, `;
  const cpu = r.serverCpuUsPerOp === null ? '' : `, ${fmt(r.serverCpuUsPerOp, 'µs CPU/op')}`;
  const errs = r.errors > 0 ? `, ${r.errors} errors` : '';
  return `${rate}p50 ${fmt(r.p50Ms, 'ms')}, p99 ${fmt(r.p99Ms, 'ms')}${cpu}${errs}`;
}

/** What a round runs its workloads on: a 3-member cluster, or a PostgreSQL server. */
interface BenchSystem {
  readonly endpoints: readonly string[];
  readonly pids: ReadonlyArray<number | undefined>;
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  restart(i: number): Promise<void>;
  waitReady(timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

async function measureOne(
  w: Workload,
  ctx: WorkloadContext,
  cluster: BenchSystem,
  round: number,
): Promise<RunRecord> {
  const prepared = await w.prepare(ctx);
  try {
    const before = snapshotCpu(cluster.pids);
    const m = await prepared.measure();
    const after = snapshotCpu(cluster.pids);
    // PostgreSQL's work is in forked backends, not in the postmaster's own counters.
    const cpuUs =
      w.cpuPerOp && ctx.kind !== 'postgres' ? cpuMicrosBetween(before, after) : undefined;
    const lat = summarizeLatencies(m.latenciesMs);
    return {
      round,
      ops: m.ops,
      errors: m.errors,
      durationMs: m.durationMs,
      opsPerSec: m.opsPerSec,
      ...lat,
      serverCpuUsPerOp: cpuUs === undefined || m.ops === 0 ? null : cpuUs / m.ops,
      peakRssMiB: cluster.pids.map((pid) => (pid === undefined ? null : (peakRssMiB(pid) ?? null))),
      ...(m.opsPerSec === null ? { samplesMs: [...m.latenciesMs] } : {}),
      ...(m.extra === undefined ? {} : { extra: m.extra }),
    };
  } finally {
    await prepared.cleanup();
  }
}

function failedRecord(round: number, error: unknown): RunRecord {
  return {
    round,
    ops: 0,
    errors: 0,
    durationMs: 0,
    opsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    meanMs: null,
    serverCpuUsPerOp: null,
    peakRssMiB: [],
    error: error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
  };
}

/** Run every workload on one fresh cluster of `kind`. */
async function runSystem(
  kind: SystemKind,
  round: number,
  rounds: number,
  workloads: readonly Workload[],
  sizes: BenchSizes,
  options: BenchOptions,
  progress: Progress,
  record: (w: Workload, r: RunRecord) => void,
  rssPeak: Array<number | null>,
  tls: BenchTls | undefined,
): Promise<void> {
  progress.note(
    `round ${round}/${rounds}: starting ${kind === 'postgres' ? 'a PostgreSQL server' : `a 3-member ${kind} cluster`}`,
  );
  const cluster: BenchSystem =
    kind === 'postgres'
      ? await startBenchPostgres()
      : await startBenchCluster({
          kind,
          ...(options.memberNodeArgs === undefined
            ? {}
            : { memberNodeArgs: options.memberNodeArgs }),
          ...(tls === undefined ? {} : { tls: tls.launch }),
        });
  // Every client of the run is configured for TLS or not by `tls`: a member on the other scheme
  // would be measured under the wrong label.
  const scheme = tls === undefined ? 'http://' : 'https://';
  if (kind !== 'postgres' && !cluster.endpoints.every((e) => e.startsWith(scheme))) {
    await cluster.stop();
    const urls = cluster.endpoints.join(', ');
    throw new BenchSetupError(`${kind} members are not on ${scheme} URLs: ${urls}`);
  }
  const ctx: WorkloadContext = {
    kind,
    endpoints: cluster.endpoints,
    get pids() {
      return cluster.pids;
    },
    members: cluster,
    sizes,
    ...(tls === undefined ? {} : { tls: tls.files }),
    tag: randomBytes(8).toString('base64url').replace(/[-_]/g, 'x').slice(0, 3),
  };
  try {
    if (kind !== 'postgres') {
      progress.note(`round ${round}/${rounds}: warming up the ${kind} cluster (unmeasured)`);
      await warmUpCluster(cluster.endpoints, ctx.tag, sizes.clusterWarmupOps, ctx.tls);
    }
    let healthy = true;
    for (const w of workloads) {
      progress.begin(`round ${round}/${rounds} ${kind}: ${w.name}`);
      let r: RunRecord;
      if (!healthy) {
        r = failedRecord(round, new Error('skipped: the cluster failed earlier in this run'));
      } else if (kind === 'postgres' && w.postgres !== true) {
        r = failedRecord(round, new Error('skipped: not a workload of the PostgreSQL backend'));
      } else {
        try {
          r = await measureOne(w, ctx, cluster, round);
        } catch (e) {
          r = failedRecord(round, e);
          healthy = await cluster.waitReady(10_000).then(
            () => true,
            () => false,
          );
        }
      }
      r.peakRssMiB.forEach((v, i) => {
        if (v !== null) rssPeak[i] = Math.max(rssPeak[i] ?? 0, v);
      });
      record(w, r);
      progress.end(oneLine(w, r));
    }
  } finally {
    await cluster.stop();
  }
}

export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const base = options.quick ? quickSizes : fullSizes;
  const sizes: BenchSizes = { ...base, rounds: options.rounds ?? base.rounds };
  const workloads = selectWorkloads(options.workloads);
  const systems: SystemKind[] = [
    'tenure',
    ...(options.vsEtcd ? etcdSystems(options.etcdTimings ?? ['default']) : []),
    ...(options.vsPostgres === true ? (['postgres'] as const) : []),
  ];
  const timing: Partial<Record<SystemKind, RaftTiming>> = {};
  for (const k of systems) {
    const t = timingOf(k);
    if (t !== null) timing[k] = t;
  }
  if (options.vsEtcd) requireEtcd();
  const tls = options.tls;
  // The throwaway PostgreSQL server listens on a Unix socket without TLS: a --tls figure for it
  // would be a plain one under a TLS label.
  if (tls !== undefined && options.vsPostgres === true)
    throw new BenchUsageError('--tls covers tenure and etcd only, not --vs postgres');
  const machine = describeMachine(options.command, options.vsEtcd);
  const progress = new Progress({
    name: 'bench',
    total: sizes.rounds * systems.length * workloads.length,
    quiet: options.json,
  });
  const runs = new Map<string, Partial<Record<SystemKind, RunRecord[]>>>();
  const rssPeak: Partial<Record<SystemKind, Array<number | null>>> = {};
  const started = performance.now();
  try {
    for (let round = 1; round <= sizes.rounds; round++) {
      // Alternate which system goes first, so drift in the machine's load spreads over both.
      const order = round % 2 === 1 ? systems : [...systems].reverse();
      for (const kind of order) {
        const peaks = (rssPeak[kind] ??= [null, null, null]);
        await runSystem(
          kind,
          round,
          sizes.rounds,
          workloads,
          sizes,
          options,
          progress,
          (w, r) => {
            const byKind = runs.get(w.name) ?? {};
            (byKind[kind] ??= []).push(r);
            runs.set(w.name, byKind);
          },
          peaks,
          tls,
        );
      }
    }
  } finally {
    progress.finish();
    await stopAll();
  }
  finishMachine(machine);
  const result: BenchResult = {
    workloads: workloads.map((w) => workloadResult(w, runs.get(w.name) ?? {})),
    machine,
    rounds: sizes.rounds,
    sizes,
    systems,
    timing,
    tls: tls !== undefined,
    peakRssPerMemberMiB: rssPeak,
    durationS: (performance.now() - started) / 1000,
    pidsStarted: pidsStarted(),
  };
  if (options.outDir !== undefined) writeOutputs(result, options.outDir);
  return result;
}

/** result.json, report.md and one SVG chart per workload in `dir`. */
export function writeOutputs(result: BenchResult, dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'result.json'), `${JSON.stringify(result, null, 2)}\n`);
  const charts = result.workloads.map((w) => {
    const file = `${w.name}.svg`;
    writeFileSync(join(dir, file), renderSvg(w));
    return file;
  });
  writeFileSync(join(dir, 'report.md'), renderMarkdown(result, charts));
}

export { renderTable };
