// One SVG bar chart per workload: for each metric a pair of bars (tenure, etcd), each pair scaled
// to its own larger value because the metrics have different units. Hand-written SVG, no
// dependencies; the numbers are printed next to the bars.
import { formatValue, metricRows } from './report-rows.js';
import type { WorkloadResult } from './result.js';

const width = 640;
const labelWidth = 230;
const barMaxWidth = 300;
const barHeight = 14;
const rowGap = 12;
const top = 40;
const colors = { tenure: '#2b6cb0', etcd: '#a0a0a0' } as const;

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function renderSvg(w: WorkloadResult): string {
  const rows = metricRows(w);
  const rowHeight = 2 * barHeight + rowGap;
  const height = top + rows.length * rowHeight + 30;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${escapeXml(`${w.name}: ${w.title}`)}</text>`,
  ];
  rows.forEach((r, i) => {
    const y = top + i * rowHeight;
    const max = Math.max(r.tenure ?? 0, r.etcd ?? 0);
    parts.push(`<text x="10" y="${y + barHeight + 4}">${escapeXml(r.label)}</text>`);
    (['tenure', 'etcd'] as const).forEach((sys, j) => {
      const v = r[sys];
      const by = y + j * barHeight;
      const bw = v === null || max === 0 ? 0 : Math.max(1, (v / max) * barMaxWidth);
      parts.push(
        `<rect x="${labelWidth}" y="${by}" width="${bw.toFixed(1)}" height="${barHeight - 2}" ` +
          `fill="${colors[sys]}"/>`,
        `<text x="${labelWidth + bw + 6}" y="${by + barHeight - 3}">` +
          `${sys} ${escapeXml(formatValue(v))}</text>`,
      );
    });
  });
  parts.push(
    `<text x="10" y="${height - 10}" fill="#555">` +
      `${escapeXml(`medians over rounds; ${rows[0]?.better === 'higher' ? 'first row: higher is better; ' : ''}latency, CPU, RSS: lower is better`)}</text>`,
    '</svg>',
  );
  return parts.join('\n') + '\n';
}
