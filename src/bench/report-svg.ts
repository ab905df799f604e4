// One SVG bar chart per workload: for each metric a pair of bars (tenure, etcd; a third for
// etcd-50/500 when it ran), each group scaled to its own larger value because the metrics have
// different units; the numbers are printed next to the bars. The elements are written by src/render/svg.ts, as the detector evaluation's are.
import { svgDocument, svgElement } from '../render/svg.js';
import { formatValue, metricRows } from './report-rows.js';
import type { WorkloadResult } from './result.js';

const width = 640;
const labelWidth = 230;
const barMaxWidth = 300;
const barHeight = 14;
const rowGap = 12;
const top = 40;
const colors = { tenure: '#2b6cb0', etcd: '#a0a0a0', etcd50: '#606060' } as const;
const barLabels = { tenure: 'tenure', etcd: 'etcd', etcd50: 'etcd-50/500' } as const;

export function renderSvg(w: WorkloadResult): string {
  const rows = metricRows(w);
  // etcd at 50/500 ms (`--etcd-timing`) gets a third bar when it ran.
  const bars = rows.some((r) => r.etcd50 !== null)
    ? (['tenure', 'etcd', 'etcd50'] as const)
    : (['tenure', 'etcd'] as const);
  const rowHeight = bars.length * barHeight + rowGap;
  const height = top + rows.length * rowHeight + 30;
  const parts: string[] = [
    svgElement(
      'text',
      { x: 10, y: 20, 'font-size': 14, 'font-weight': 'bold' },
      `${w.name}: ${w.title}`,
    ),
  ];
  rows.forEach((r, i) => {
    const y = top + i * rowHeight;
    const max = Math.max(r.tenure ?? 0, r.etcd ?? 0, r.etcd50 ?? 0);
    parts.push(svgElement('text', { x: 10, y: y + barHeight + 4 }, r.label));
    bars.forEach((sys, j) => {
      const v = r[sys];
      const by = y + j * barHeight;
      const bw = v === null || max === 0 ? 0 : Math.max(1, (v / max) * barMaxWidth);
      parts.push(
        svgElement('rect', {
          x: labelWidth,
          y: by,
          width: bw.toFixed(1),
          height: barHeight - 2,
          fill: colors[sys],
        }),
        svgElement(
          'text',
          { x: labelWidth + bw + 6, y: by + barHeight - 3 },
          `${barLabels[sys]} ${formatValue(v)}`,
        ),
      );
    });
  });
  const higher = rows[0]?.better === 'higher' ? 'first row: higher is better; ' : '';
  parts.push(
    svgElement(
      'text',
      { x: 10, y: height - 10, fill: '#555' },
      `medians over rounds; ${higher}latency, CPU, RSS: lower is better`,
    ),
  );
  return svgDocument(width, height, parts, { viewBox: true });
}
