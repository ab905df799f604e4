// The text table printed at the end of a run: one row per workload and metric, medians over the
// rounds, and tenure/etcd.
import {
  formatRatio,
  formatValue,
  metricRows,
  tenureLoses,
  tenureLosesToEtcd50,
} from './report-rows.js';
import { timingLabel, transportLabel, type BenchResult } from './result.js';

function pad(
  cells: readonly string[],
  widths: readonly number[],
  right: readonly boolean[],
): string {
  return cells
    .map((c, i) => {
      const w = widths[i] ?? 0;
      return right[i] === true ? c.padStart(w) : c.padEnd(w);
    })
    .join('  ')
    .trimEnd();
}

export function renderTable(result: BenchResult): string {
  const withEtcd = result.systems.includes('etcd');
  const withEtcd50 = result.systems.includes('etcd-50/500');
  const withPostgres = result.systems.includes('postgres');
  // Each cluster column names the Raft timing it ran with (heartbeat/election timeout, ms).
  const col = (k: 'tenure' | 'etcd' | 'etcd-50/500'): string => {
    const t = result.timing[k];
    return k === 'etcd-50/500' || t === undefined ? k : `${k} ${timingLabel(t)}`;
  };
  const header = ['workload', 'metric', col('tenure')];
  const right = [false, false, true];
  if (withEtcd) {
    header.push(col('etcd'), 'tenure/etcd', '');
    right.push(true, true, false);
  }
  if (withEtcd50) {
    header.push(col('etcd-50/500'), 'tenure/etcd-50/500', '');
    right.push(true, true, false);
  }
  // PostgreSQL goes after the others (no ratio: it is not a 3-member cluster).
  if (withPostgres) {
    header.push('postgres');
    right.push(true);
  }
  const rows: string[][] = [];
  for (const w of result.workloads) {
    metricRows(w).forEach((r, i) => {
      const name = i === 0 ? w.name : '';
      const row = [name, r.label, formatValue(r.tenure)];
      if (withEtcd) {
        const flag = tenureLoses(r) ? '← tenure worse' : '';
        row.push(formatValue(r.etcd), formatRatio(r.ratio), flag);
      }
      if (withEtcd50) {
        const flag = tenureLosesToEtcd50(r) ? '← tenure worse' : '';
        row.push(formatValue(r.etcd50), formatRatio(r.ratioEtcd50), flag);
      }
      if (withPostgres) row.push(formatValue(r.postgres));
      rows.push(row);
    });
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const vs = withEtcd || withEtcd50 ? ' vs etcd' : '';
  const title = `tenure bench${vs}: ${transportLabel(result.tls)}`;
  const lines = [
    title,
    '',
    pad(header, widths, right),
    rule,
    ...rows.map((r) => pad(r, widths, right)),
  ];
  const m = result.machine;
  lines.push(
    '',
    `medians over ${result.rounds} round(s); ratio = tenure/etcd (ops/s: > 1 is tenure faster; ` +
      'latency, CPU, RSS: < 1 is tenure better); timing = Raft heartbeat/election timeout, ms',
    `${m.cpuModel}, ${m.cores} cores, ${m.ramGiB} GiB, Linux ${m.kernel}, Node ${m.node}` +
      (m.etcd === null ? '' : `, etcd ${m.etcd}`),
    `load average at start ${m.loadAvgStart.join(' ')}, at end ${m.loadAvgEnd.join(' ')}; ` +
      `${Math.round(result.durationS)} s`,
  );
  return lines.join('\n');
}
