// The run's report: every anomaly with the nemesis steps that led to it, the operations that show
// it and the member log lines around it, then a summary; with --json the last stdout line is
// {"minutes", "ops", "anomalies", "workloads": [...]}. Written to the out directory as well.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Anomaly } from './anomaly.js';
import type { Timeline } from './timeline.js';
import type { WorkloadResult } from './workloads/workload.js';

/** Nemesis steps quoted before an anomaly, and how far back they are looked for. */
const stepsMax = 8;
const stepsWindowMs = 60_000;
/** Member log lines around an anomaly: this long before and after, at most so many per member. */
const logBeforeMs = 3_000;
const logAfterMs = 1_000;
const logLinesPerMember = 12;

export interface ReportedAnomaly extends Anomaly {
  readonly at: string;
  readonly steps: readonly string[];
  readonly logs: readonly string[];
}

export interface ChaosSummary {
  readonly minutes: number;
  readonly ops: number;
  readonly anomalies: number;
  readonly seed: number;
  readonly members: number;
  readonly steps: number;
  readonly faults: Readonly<Record<string, number>>;
  /** Whether the members held one state at the end (agreement.ts). */
  readonly agreement: string;
  readonly workloads: readonly {
    readonly name: string;
    readonly ops: number;
    readonly unknown: number;
    readonly verdict: string;
    readonly anomalies: number;
    readonly detail?: string;
  }[];
}

/** Member log lines (JSON with a wall-clock `time`) within the window around `atMs`. */
function logLines(
  logFiles: readonly string[],
  names: readonly string[],
  t: Timeline,
  atMs: number,
) {
  const from = t.epochOf(atMs - logBeforeMs);
  const to = t.epochOf(atMs + logAfterMs);
  const out: string[] = [];
  logFiles.forEach((file, i) => {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return;
    }
    const picked: string[] = [];
    for (const line of text.split('\n')) {
      // Member logs carry etcd's `ts` (ISO 8601, member-log.ts).
      const m = /"ts":"([^"]+)"/.exec(line);
      if (m === null) continue;
      const time = Date.parse(m[1] ?? '');
      if (time >= from && time <= to) picked.push(line);
    }
    for (const line of picked.slice(-logLinesPerMember)) out.push(`${names[i]}: ${line}`);
  });
  return out;
}

export function reportAnomalies(
  anomalies: readonly Anomaly[],
  t: Timeline,
  logFiles: readonly string[],
  names: readonly string[],
): ReportedAnomaly[] {
  return anomalies.map((a) => ({
    ...a,
    at: t.at(a.atMs),
    steps: t
      .between(a.atMs - stepsWindowMs, a.atMs)
      .slice(-stepsMax)
      .map((e) => `${t.at(e.atMs)} ${e.kind}: ${e.text}`),
    logs: logLines(logFiles, names, t, a.atMs),
  }));
}

export function renderAnomaly(a: ReportedAnomaly, n: number): string {
  const lines = [`anomaly ${n}: ${a.workload} ${a.kind} at ${a.at}`, `  ${a.message}`];
  if (a.steps.length > 0)
    lines.push('  nemesis steps before it:', ...a.steps.map((s) => `    ${s}`));
  if (a.excerpt.length > 0) lines.push('  history:', ...a.excerpt.map((s) => `    ${s}`));
  if (a.logs.length > 0) lines.push('  member logs around it:', ...a.logs.map((s) => `    ${s}`));
  return lines.join('\n');
}

export function summarize(
  minutes: number,
  run: { readonly seed: number; readonly members: number },
  steps: readonly string[],
  results: readonly WorkloadResult[],
  anomalies: readonly Anomaly[],
  agreement: string,
): ChaosSummary {
  const { seed, members } = run;
  const faults: Record<string, number> = {};
  for (const s of steps) faults[s] = (faults[s] ?? 0) + 1;
  return {
    minutes: Math.round(minutes * 100) / 100,
    ops: results.reduce((n, r) => n + r.ops, 0),
    anomalies: anomalies.length,
    seed,
    members,
    steps: steps.length,
    faults,
    agreement,
    workloads: results.map((r) => ({
      name: r.name,
      ops: r.ops,
      unknown: r.unknown,
      verdict: r.verdict,
      anomalies: r.anomalies.length,
      ...(r.detail === undefined ? {} : { detail: r.detail }),
    })),
  };
}

export function writeReport(
  dir: string,
  summary: ChaosSummary,
  anomalies: readonly ReportedAnomaly[],
  t: Timeline,
): void {
  writeFileSync(
    join(dir, 'report.json'),
    `${JSON.stringify({ summary, anomalies, timeline: t.entries }, null, 2)}\n`,
  );
}
