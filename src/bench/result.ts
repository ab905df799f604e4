// The bench's result: per workload, every run's figures, the median over rounds per system, and
// the ratio tenure/etcd per metric. This is the JSON `--json` prints and `--out` writes.
import type { BenchSizes } from './config.js';
import type { RaftTiming, SystemKind } from './cluster.js';
import type { Machine } from './machine.js';
import { medianOf, ratio } from './stats.js';
import type { ExtraRow, Workload } from './workloads/index.js';

/** One workload on one system in one round. */
export interface RunRecord {
  readonly round: number;
  /** Completed operations and failed ones. */
  readonly ops: number;
  readonly errors: number;
  readonly durationMs: number;
  readonly opsPerSec: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly meanMs: number | null;
  /** Server CPU (3 members summed) per operation, µs; null for workloads that kill members. */
  readonly serverCpuUsPerOp: number | null;
  /** VmHWM per member at the end of the workload, MiB (null for a member not running). */
  readonly peakRssMiB: ReadonlyArray<number | null>;
  /** Failover samples, ms (failover workloads only). */
  readonly samplesMs?: readonly number[];
  readonly extra?: Readonly<Record<string, number>>;
  /** Set when the workload failed in this run; the figures are then absent. */
  readonly error?: string;
}

/** Medians over the rounds. */
export interface SystemResult {
  readonly opsPerSec: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly serverCpuUsPerOp: number | null;
  /** Median over rounds of the largest member's VmHWM. */
  readonly peakRssMiB: number | null;
  /** Median over rounds of each of the workload's `extra` figures (those its extraRows name). */
  readonly extra: Readonly<Record<string, number | null>>;
  readonly runs: readonly RunRecord[];
}

/** tenure / etcd per metric (> 1 means tenure is faster for opsPerSec, slower for the rest). */
export interface Ratio {
  readonly opsPerSec: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly serverCpuUsPerOp: number | null;
  readonly peakRssMiB: number | null;
}

export interface WorkloadResult {
  readonly name: string;
  readonly title: string;
  readonly opName: string;
  readonly latencyName: string;
  readonly tenure: SystemResult | null;
  readonly etcd: SystemResult | null;
  /** PostgreSQL through tenure/pg (`--vs postgres`; lock-handoff only). */
  readonly postgres: SystemResult | null;
  /** etcd with `--heartbeat-interval=50 --election-timeout=500` (`--etcd-timing 50/500`). */
  readonly 'etcd-50/500': SystemResult | null;
  readonly ratio: Ratio | null;
  /** tenure / etcd-50/500 per metric. */
  readonly ratioEtcd50: Ratio | null;
  /** The workload's own figures the reports show as rows (from each run's `extra`). */
  readonly extraRows: readonly ExtraRow[];
}

export interface BenchResult {
  readonly workloads: readonly WorkloadResult[];
  readonly machine: Machine;
  readonly rounds: number;
  readonly sizes: BenchSizes;
  readonly systems: readonly SystemKind[];
  /** Raft heartbeat / election timeout each cluster system ran with, in ms. */
  readonly timing: Readonly<Partial<Record<SystemKind, RaftTiming>>>;
  /**
   * Whether the clusters ran with TLS (`--tls`): https:// client and peer URLs, client
   * certificates required, every client presenting one.
   */
  readonly tls: boolean;
  /** Peak RSS per member over the whole run (max over rounds and restarts), MiB. */
  readonly peakRssPerMemberMiB: Readonly<Partial<Record<SystemKind, ReadonlyArray<number | null>>>>;
  readonly durationS: number;
  /** Every process the bench started (members, restarts, elector children), all stopped by now. */
  readonly pidsStarted: readonly number[];
}

/** `100/1000 ms`: heartbeat / election timeout, as the reports label a system's column. */
export function timingLabel(t: RaftTiming): string {
  return `${t.heartbeatIntervalMs}/${t.electionTimeoutMs} ms`;
}

/** How the report names the transport of a run. */
export function transportLabel(tls: boolean): string {
  return tls
    ? 'TLS on (https:// client and peer URLs, client certificates required)'
    : 'TLS off (plain http:// client and peer URLs)';
}

function maxMember(rss: ReadonlyArray<number | null>): number | null {
  const defined = rss.filter((v): v is number => v !== null);
  return defined.length === 0 ? null : Math.max(...defined);
}

export function summarizeSystem(
  runs: readonly RunRecord[],
  extraRows: readonly ExtraRow[] = [],
): SystemResult {
  const ok = runs.filter((r) => r.error === undefined);
  const extra: Record<string, number | null> = {};
  for (const row of extraRows) extra[row.key] = medianOf(ok.map((r) => r.extra?.[row.key]));
  return {
    opsPerSec: medianOf(ok.map((r) => r.opsPerSec)),
    p50Ms: medianOf(ok.map((r) => r.p50Ms)),
    p99Ms: medianOf(ok.map((r) => r.p99Ms)),
    serverCpuUsPerOp: medianOf(ok.map((r) => r.serverCpuUsPerOp)),
    peakRssMiB: medianOf(ok.map((r) => maxMember(r.peakRssMiB))),
    extra,
    runs,
  };
}

export function ratioOf(t: SystemResult, e: SystemResult): Ratio {
  return {
    opsPerSec: ratio(t.opsPerSec, e.opsPerSec),
    p50Ms: ratio(t.p50Ms, e.p50Ms),
    p99Ms: ratio(t.p99Ms, e.p99Ms),
    serverCpuUsPerOp: ratio(t.serverCpuUsPerOp, e.serverCpuUsPerOp),
    peakRssMiB: ratio(t.peakRssMiB, e.peakRssMiB),
  };
}

export function workloadResult(
  w: Workload,
  runs: Readonly<Partial<Record<SystemKind, readonly RunRecord[]>>>,
): WorkloadResult {
  const rows = w.extraRows ?? [];
  const of = (k: SystemKind): SystemResult | null => {
    const r = runs[k];
    return r === undefined ? null : summarizeSystem(r, rows);
  };
  const tenure = of('tenure');
  const etcd = of('etcd');
  const postgres = of('postgres');
  const etcd50 = of('etcd-50/500');
  return {
    name: w.name,
    title: w.title,
    opName: w.opName,
    latencyName: w.latencyName,
    tenure,
    etcd,
    postgres,
    'etcd-50/500': etcd50,
    ratio: tenure !== null && etcd !== null ? ratioOf(tenure, etcd) : null,
    ratioEtcd50: tenure !== null && etcd50 !== null ? ratioOf(tenure, etcd50) : null,
    extraRows: rows,
  };
}
