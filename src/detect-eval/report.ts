// The evaluation report: the detection targets (checkTargets) checked against the rows, a
// markdown table per scenario, and an SVG plot of mistake rate against detection time per
// detector. Pure string building; the CLI writes the files.

import { markdownTable } from '../render/markdown-table.js';
import { svgDocument, svgElement, type SvgAttrs } from '../render/svg.js';
import { DETECTORS } from './detectors.js';
import type { EvalRow } from './harness.js';
import { SCENARIOS } from './scenarios.js';

export interface TargetResult {
  readonly id: string;
  readonly n: number;
  readonly what: string;
  /** tenure's number, in the unit of `threshold`; null when the harness produced none. */
  readonly value: number | null;
  readonly threshold: string;
  readonly met: boolean;
  /** The same number for each baseline. */
  readonly baselines: Readonly<Record<string, number | null>>;
  readonly note?: string;
}

export interface EvalReport {
  readonly rows: readonly EvalRow[];
  readonly targets: readonly TargetResult[];
  readonly meta: {
    readonly seed: number;
    readonly scale: number;
    readonly sizes: readonly number[];
    readonly detectors: readonly { readonly name: string; readonly description: string }[];
    readonly scenarios: readonly { readonly name: string; readonly description: string }[];
  };
}

const OWN = 'tenure';

function row(
  rows: readonly EvalRow[],
  scenario: string,
  detector: string,
  n: number,
): EvalRow | undefined {
  return rows.find((r) => r.scenario === scenario && r.detector === detector && r.n === n);
}

function perDetector(
  rows: readonly EvalRow[],
  scenario: string,
  n: number,
  pick: (r: EvalRow) => number | null,
): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const d of DETECTORS) {
    if (d.name === OWN) continue;
    const r = row(rows, scenario, d.name, n);
    if (r !== undefined) out[d.name] = pick(r);
  }
  return out;
}

/** Check the targets the issue names (T1, T2, T3, T4, T7 and the message budget). */
export function checkTargets(rows: readonly EvalRow[], sizes: readonly number[]): TargetResult[] {
  const out: TargetResult[] = [];
  const add = (
    id: string,
    n: number,
    what: string,
    scenario: string,
    pick: (r: EvalRow) => number | null,
    threshold: string,
    ok: (v: number) => boolean,
    note?: string,
  ) => {
    const r = row(rows, scenario, OWN, n);
    if (r === undefined) return;
    const value = pick(r);
    out.push({
      id,
      n,
      what,
      value,
      threshold,
      met: value !== null && ok(value),
      baselines: perDetector(rows, scenario, n, pick),
      ...(note === undefined ? {} : { note }),
    });
  };
  for (const n of sizes) {
    add(
      'T1',
      n,
      'silent crash → dead, first observer, p99 (ms)',
      'silent-crash',
      (r) => r.detectionP99Ms,
      '≤ 4500',
      (v) => v <= 4500,
    );
    add(
      'T1',
      n,
      'silent crash → dead, first observer, p50 (ms)',
      'silent-crash',
      (r) => r.detectionP50Ms,
      '≤ 3500',
      (v) => v <= 3500,
    );
    add(
      'T1',
      n,
      'silent crash → dead at all members, p99 (ms)',
      'silent-crash',
      (r) => r.detectionAllP99Ms,
      '≤ 5500',
      (v) => v <= 5500,
    );
    add(
      'T2',
      n,
      'crash with evidence → dead, first observer, p99 (ms)',
      'crash-with-evidence',
      (r) => r.detectionP99Ms,
      '≤ 1000',
      (v) => v <= 1000,
    );
    add(
      'T3',
      n,
      'longest target pause that never produced dead (ms)',
      'target-pause',
      (r) => r.pauseToleranceMs,
      '≥ 3000',
      (v) => v >= 3000,
    );
    add(
      'T4',
      n,
      'accusations by an observer within 5 s after its own 0.5–30 s stall',
      'observer-stall',
      (r) => r.staleAccusations,
      '= 0',
      (v) => v === 0,
    );
    const swim = row(rows, 'slow-members', 'swim', n);
    const swimFd = swim?.falseDeadHealthy ?? null;
    add(
      'T7',
      n,
      'slow members: false dead about healthy members (count)',
      'slow-members',
      (r) => r.falseDeadHealthy,
      swimFd === null ? '≤ swim / 50' : `≤ swim / 50 = ${(swimFd / 50).toFixed(2)}`,
      (v) => (swimFd === null ? false : v <= swimFd / 50),
      swimFd === 0
        ? 'plain SWIM produced no false dead here, so the 50× ratio is not measurable'
        : undefined,
    );
    add(
      'T7',
      n,
      'slow members: mistake rate λ_M (per pair-hour), for the ratio when false dead is 0',
      'slow-members',
      (r) => r.mistakeRatePerPairHour,
      '(reported)',
      () => true,
    );
    const ml = row(rows, 'quiet-lan', 'memberlist', n);
    add(
      'budget',
      n,
      'packets per node per second at steady state (quiet LAN)',
      'quiet-lan',
      (r) => r.packetsPerNodePerSecond,
      ml === undefined ? '≤ memberlist' : `≤ memberlist = ${ml.packetsPerNodePerSecond}`,
      (v) => ml !== undefined && v <= ml.packetsPerNodePerSecond,
    );
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// Markdown

function fmt(x: number | null | undefined, digits = 0): string {
  if (x === null || x === undefined) return '–';
  if (!Number.isFinite(x)) return String(x);
  return digits === 0 ? String(Math.round(x)) : x.toFixed(digits);
}

function sec(ms: number | null): string {
  return ms === null ? '–' : (ms / 1000).toFixed(2);
}

const SCENARIO_COLUMNS = [
  'detector',
  'n',
  'T_D first p50 / p99 (s)',
  'T_D all p50 / p99 (s)',
  'false dead /node-h',
  'healthy /node-h',
  'λ_M /pair-h',
  'P_A',
  'flaps /node-h',
  'scenario metric',
  'pkts /node/s',
];

export function markdownReport(report: EvalReport): string {
  const lines: string[] = [];
  lines.push('# Failure detection: evaluation', '');
  lines.push(
    `Seeded discrete-event simulation (seed ${report.meta.seed}, scale ${report.meta.scale}), ` +
      `cluster sizes ${report.meta.sizes.join(', ')}. Detection times are from the crash to the first ` +
      '`dead` verdict (first observer) and to the last live member agreeing (all), in seconds. ' +
      'False dead counts `dead` verdicts about running members at observers that were not ' +
      'stopped; "healthy" excludes members that were themselves degraded (slow, cut). λ_M and P_A are ' +
      "Chen's mistake rate (wrong suspect-or-dead per pair-hour) and query accuracy.",
    '',
  );
  lines.push('## Detectors', '');
  for (const d of report.meta.detectors) lines.push(`- **${d.name}**: ${d.description}`);
  lines.push('', '## Targets', '');
  const targets = report.targets.map((t) => [
    t.id,
    t.n,
    `${t.what}${t.note === undefined ? '' : ` (${t.note})`}`,
    t.threshold,
    fmt(t.value, 3),
    t.met ? 'yes' : '**no**',
    ...baselineNames().map((name) => fmt(t.baselines[name] ?? null, 3)),
  ]);
  lines.push(
    ...markdownTable(
      ['target', 'n', 'what', 'threshold', 'tenure', 'met', ...baselineNames()],
      targets,
    ),
  );
  for (const s of SCENARIOS) {
    const rs = report.rows.filter((r) => r.scenario === s.name);
    if (rs.length === 0) continue;
    lines.push('', `## ${s.name}`, '', s.description, '');
    const cells = rs.map((r) => [
      r.detector,
      r.n,
      `${sec(r.detectionP50Ms)} / ${sec(r.detectionP99Ms)}`,
      `${sec(r.detectionAllP50Ms)} / ${sec(r.detectionAllP99Ms)}`,
      fmt(r.falseDeadPerNodeHour, 3),
      fmt(r.falseDeadHealthyPerNodeHour, 3),
      fmt(r.mistakeRatePerPairHour, 4),
      fmt(r.queryAccuracy, 6),
      fmt(r.flapsPerNodeHour, 2),
      scenarioMetric(r),
      fmt(r.packetsPerNodePerSecond, 2),
    ]);
    lines.push(...markdownTable(SCENARIO_COLUMNS, cells));
  }
  lines.push('');
  return lines.join('\n');
}

function baselineNames(): string[] {
  return DETECTORS.filter((d) => d.name !== OWN).map((d) => d.name);
}

function scenarioMetric(r: EvalRow): string {
  switch (r.kind) {
    case 'crash':
    case 'warmup':
      return `${r.detectionSamples} crashes${r.detectionCensored > 0 ? `, ${r.detectionCensored} not seen by all` : ''}`;
    case 'pause':
      return `P* ${sec(r.pauseToleranceMs)} s; dead by length ${JSON.stringify(r.pauseDeadFraction)}`;
    case 'stall':
      return `stale accusations ${fmt(r.staleAccusations)} (dead ${fmt(r.staleDead)})`;
    case 'partition':
      return r.linkCuts === null
        ? '–'
        : `link unreachable ${fmt(r.linkCutsDetected)}/${fmt(r.linkCuts)}, p50 ${sec(r.linkDetectP50Ms)} s`;
    case 'restart':
      return `all alive everywhere ${sec(r.convergenceMs)} s after the last restart`;
    default:
      return `${fmt(r.falseDeadIncidents)} members falsely dead`;
  }
}

// -------------------------------------------------------------------------------------------------
// SVG: mistake rate (noise scenarios) against detection time (silent crash), one point per
// detector and cluster size.

const NOISE = ['quiet-lan', 'noisy-cloud', 'burst-loss', 'heavy-tail'];
const COLORS = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];

export function svgPlot(report: EvalReport): string {
  const W = 760;
  const H = 480;
  const L = 80;
  const R = 200;
  const T = 40;
  const B = 60;
  const floor = 1e-4;
  const pts: { name: string; n: number; x: number; y: number; zero: boolean; color: string }[] = [];
  DETECTORS.forEach((d, i) => {
    for (const n of report.meta.sizes) {
      const crash = row(report.rows, 'silent-crash', d.name, n);
      const noise = NOISE.map((s) => row(report.rows, s, d.name, n)).filter(
        (r): r is EvalRow => r !== undefined,
      );
      if (crash?.detectionP50Ms === null || crash === undefined || noise.length === 0) continue;
      const lambda = noise.reduce((a, r) => a + r.mistakeRatePerPairHour, 0) / noise.length;
      pts.push({
        name: d.name,
        n,
        x: crash.detectionP50Ms / 1000,
        y: Math.max(lambda, floor),
        zero: lambda < floor,
        color: COLORS[i % COLORS.length] as string,
      });
    }
  });
  const xMax = Math.max(5, ...pts.map((p) => p.x)) * 1.1;
  const yMax = Math.max(1, ...pts.map((p) => p.y)) * 2;
  const lx = (x: number) => L + (x / xMax) * (W - L - R);
  const ly = (y: number) =>
    T +
    (1 - (Math.log10(y) - Math.log10(floor)) / (Math.log10(yMax) - Math.log10(floor))) *
      (H - T - B);
  const out: string[] = [];
  const text = (attrs: SvgAttrs, t: string) => out.push(svgElement('text', attrs, t));
  const line = (x1: number, y1: number, x2: number, y2: number) =>
    out.push(svgElement('line', { x1, y1, x2, y2, stroke: 'black' }));
  text({ x: W / 2 - 60, y: 22, 'font-size': 14 }, 'Mistake rate against detection time');
  line(L, H - B, W - R, H - B);
  line(L, T, L, H - B);
  for (let x = 0; x <= xMax; x += xMax > 20 ? 5 : 1) {
    line(lx(x), H - B, lx(x), H - B + 5);
    text({ x: lx(x) - 6, y: H - B + 18 }, String(x));
  }
  for (let e = Math.log10(floor); e <= Math.log10(yMax); e++) {
    const y = ly(10 ** e);
    line(L - 5, y, L, y);
    text({ x: L - 50, y: y + 4 }, `1e${e}`);
  }
  text({ x: L + 40, y: H - 20 }, 'silent crash → dead, first observer, median (s)');
  text(
    { transform: `translate(18 ${(T + H - B) / 2}) rotate(-90)`, 'text-anchor': 'middle' },
    'λ_M per pair-hour, mean of 4 scenarios (0 drawn hollow at 1e-4)',
  );
  for (const p of pts) {
    const cx = lx(p.x);
    const cy = ly(p.y);
    const paint = { fill: p.zero ? 'none' : p.color, stroke: p.color, 'stroke-width': 2 };
    // The first cluster size is drawn as circles, the others as squares.
    out.push(
      p.n === report.meta.sizes[0]
        ? svgElement('circle', { cx, cy, r: 6, ...paint })
        : svgElement('rect', { x: cx - 6, y: cy - 6, width: 12, height: 12, ...paint }),
    );
  }
  DETECTORS.forEach((d, i) => {
    const y = T + 20 + i * 20;
    const fill = COLORS[i % COLORS.length] as string;
    out.push(svgElement('rect', { x: W - R + 20, y: y - 10, width: 12, height: 12, fill }));
    text({ x: W - R + 40, y }, d.name);
  });
  const y0 = T + 20 + DETECTORS.length * 20 + 10;
  out.push(svgElement('circle', { cx: W - R + 26, cy: y0, r: 6, fill: 'none', stroke: 'black' }));
  text({ x: W - R + 40, y: y0 + 4 }, `n = ${report.meta.sizes[0] ?? ''}`);
  if (report.meta.sizes.length > 1) {
    const square = { x: W - R + 20, y: y0 + 14, width: 12, height: 12 };
    out.push(svgElement('rect', { ...square, fill: 'none', stroke: 'black' }));
    text({ x: W - R + 40, y: y0 + 24 }, `n = ${report.meta.sizes.slice(1).join(', ')}`);
  }
  return svgDocument(W, H, out);
}

/** The JSON the CLI prints with --json: the rows (and the checked targets and run metadata). */
export function jsonReport(report: EvalReport): string {
  return JSON.stringify(report, null, 2);
}
