// The text table printed at the end of a run: one row per workload and metric, medians over the
// rounds, and tenure/etcd.
import { formatRatio, formatValue, metricRows, tenureLoses } from './report-rows.js';
import { transportLabel, type BenchResult } from './result.js';

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
  const withPostgres = result.systems.includes('postgres');
  const header = withEtcd
    ? ['workload', 'metric', 'tenure', 'etcd', 'tenure/etcd', '']
    : ['workload', 'metric', 'tenure'];
  // PostgreSQL goes after the others (no ratio: it is not a 3-member cluster).
  if (withPostgres) header.push(...(withEtcd ? [] : ['']), 'postgres');
  const right = [false, false, true, true, true, false, true];
  const rows: string[][] = [];
  for (const w of result.workloads) {
    metricRows(w).forEach((r, i) => {
      const name = i === 0 ? w.name : '';
      const row = withEtcd
        ? [
            name,
            r.label,
            formatValue(r.tenure),
            formatValue(r.etcd),
            formatRatio(r.ratio),
            tenureLoses(r) ? '← tenure worse' : '',
          ]
        : [name, r.label, formatValue(r.tenure)];
      if (withPostgres) row.push(...(withEtcd ? [] : ['']), formatValue(r.postgres));
      rows.push(row);
    });
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const title = `tenure bench${withEtcd ? ' vs etcd' : ''}: ${transportLabel(result.tls)}`;
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
      'latency, CPU, RSS: < 1 is tenure better)',
    `${m.cpuModel}, ${m.cores} cores, ${m.ramGiB} GiB, Linux ${m.kernel}, Node ${m.node}` +
      (m.etcd === null ? '' : `, etcd ${m.etcd}`),
    `load average at start ${m.loadAvgStart.join(' ')}, at end ${m.loadAvgEnd.join(' ')}; ` +
      `${Math.round(result.durationS)} s`,
  );
  return lines.join('\n');
}
