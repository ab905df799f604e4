// The metric rows every report shows (text table, markdown, charts), with one way to format
// each value, so that the three agree.
import type { Ratio, SystemResult, WorkloadResult } from './result.js';

export interface MetricRow {
  readonly workload: WorkloadResult;
  readonly metric: keyof Ratio;
  readonly label: string;
  /** 'higher' or 'lower' is better. */
  readonly better: 'higher' | 'lower';
  readonly tenure: number | null;
  readonly etcd: number | null;
  readonly postgres: number | null;
  readonly ratio: number | null;
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

export function metricRows(w: WorkloadResult): MetricRow[] {
  return labels(w).map(([metric, label, better]) => ({
    workload: w,
    metric,
    label,
    better,
    tenure: pick(w.tenure, metric),
    etcd: pick(w.etcd, metric),
    postgres: pick(w.postgres, metric),
    ratio: w.ratio === null ? null : w.ratio[metric],
  }));
}

/** A value with sensible precision: 3 significant digits below 100, integers above. */
export function formatValue(v: number | null): string {
  if (v === null) return '–';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function formatRatio(r: number | null): string {
  return r === null ? '–' : `${r.toFixed(2)}×`;
}

/** Whether tenure is worse than etcd on this row (by more than `tolerance`, e.g. 0.1 = 10 %). */
export function tenureLoses(row: MetricRow, tolerance = 0.1): boolean {
  if (row.ratio === null) return false;
  return row.better === 'higher' ? row.ratio < 1 - tolerance : row.ratio > 1 + tolerance;
}
