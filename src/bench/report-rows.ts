// The metric rows every report shows (text table, markdown, charts), with one way to format
// each value, so that the three agree.
import { ratio as ratioOf } from './stats.js';
import type { Ratio, SystemResult, WorkloadResult } from './result.js';

export interface MetricRow {
  readonly workload: WorkloadResult;
  /** A key of Ratio, or `extra.<key>` for one of the workload's extraRows. */
  readonly metric: string;
  readonly label: string;
  /** 'higher' or 'lower' is better. */
  readonly better: 'higher' | 'lower';
  readonly tenure: number | null;
  readonly etcd: number | null;
  readonly postgres: number | null;
  /** etcd with 50/500 ms Raft timing (`--etcd-timing 50/500`). */
  readonly etcd50: number | null;
  readonly ratio: number | null;
  /** tenure / etcd-50/500. */
  readonly ratioEtcd50: number | null;
}

const isFailover = (w: WorkloadResult): boolean => w.opName === 'failover';

function labels(w: WorkloadResult): Array<[keyof Ratio, string, 'higher' | 'lower']> {
  if (isFailover(w)) {
    return [
      ['p50Ms', `${w.latencyName} median, ms`, 'lower'],
      ['p99Ms', `${w.latencyName} max, ms`, 'lower'],
      ['peakRssMiB', 'peak RSS, largest member, MiB', 'lower'],
    ];
  }
  return [
    ['opsPerSec', `${w.opName}s/s`, 'higher'],
    ['p50Ms', `${w.latencyName} p50, ms`, 'lower'],
    ['p99Ms', `${w.latencyName} p99, ms`, 'lower'],
    ['serverCpuUsPerOp', `server CPU µs per ${w.opName}`, 'lower'],
    ['peakRssMiB', 'peak RSS, largest member, MiB', 'lower'],
  ];
}

const pick = (s: SystemResult | null, k: keyof Ratio): number | null => (s === null ? null : s[k]);
const pickExtra = (s: SystemResult | null, k: string): number | null =>
  s === null ? null : (s.extra[k] ?? null);

export function metricRows(w: WorkloadResult): MetricRow[] {
  const etcd50 = w['etcd-50/500'];
  const standard = labels(w).map(([metric, label, better]): MetricRow => ({
    workload: w,
    metric,
    label,
    better,
    tenure: pick(w.tenure, metric),
    etcd: pick(w.etcd, metric),
    postgres: pick(w.postgres, metric),
    etcd50: pick(etcd50, metric),
    ratio: w.ratio === null ? null : w.ratio[metric],
    ratioEtcd50: w.ratioEtcd50 === null ? null : w.ratioEtcd50[metric],
  }));
  // Results written before extraRows existed have none.
  const extra = (w.extraRows ?? []).map((row): MetricRow => {
    const tenure = pickExtra(w.tenure, row.key);
    const etcd = pickExtra(w.etcd, row.key);
    const fast = pickExtra(etcd50, row.key);
    return {
      workload: w,
      metric: `extra.${row.key}`,
      label: row.label,
      better: row.better,
      tenure,
      etcd,
      postgres: pickExtra(w.postgres, row.key),
      etcd50: fast,
      ratio: ratioOf(tenure, etcd),
      ratioEtcd50: ratioOf(tenure, fast),
    };
  });
  // A failover workload's RSS row goes last, after its own figures.
  const rss = standard.filter((r) => r.metric === 'peakRssMiB');
  if (!isFailover(w)) return [...standard, ...extra];
  return [...standard.filter((r) => r.metric !== 'peakRssMiB'), ...extra, ...rss];
}

/** A value with sensible precision: 3 significant digits below 100, integers above. */
export function formatValue(v: number | null): string {
  if (v === null) return '–';
  // Counts (elections, failed requests) and whole milliseconds print without decimals.
  if (Math.abs(v) >= 100 || Number.isInteger(v)) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function formatRatio(r: number | null): string {
  return r === null ? '–' : `${r.toFixed(2)}×`;
}

/** Whether tenure is worse than etcd on this row (by more than `tolerance`, e.g. 0.1 = 10 %). */
export function tenureLoses(row: MetricRow, tolerance = 0.1): boolean {
  return losesBy(row.ratio, row.better, tolerance);
}

/** Whether tenure is worse than etcd-50/500 on this row. */
export function tenureLosesToEtcd50(row: MetricRow, tolerance = 0.1): boolean {
  return losesBy(row.ratioEtcd50, row.better, tolerance);
}

function losesBy(r: number | null, better: 'higher' | 'lower', tolerance: number): boolean {
  if (r === null) return false;
  return better === 'higher' ? r < 1 - tolerance : r > 1 + tolerance;
}
