// The evaluation matrix: every scenario × every detector × every cluster size, each cell one
// seeded simulation. The seed depends on the scenario and the size only, so all detectors face the
// same fault schedule. Pure and deterministic: the CLI runs the cells (in worker threads) and
// prints the report.

import { fnvNumber, fnvString, FNV_OFFSET, prng } from '../core/base/index.js';
import { DETECTORS, detectorByName } from './detectors.js';
import type { RunMetrics } from './metrics.js';
import { SCENARIOS, STOP_LENGTHS_MS, type ScenarioKind, type ScenarioSpec } from './scenarios.js';
import { Simulation } from './sim.js';

export interface EvalRow {
  readonly scenario: string;
  readonly kind: ScenarioKind;
  readonly detector: string;
  readonly n: number;
  /** Crash → `dead` at the first observer, ms (null when the scenario has no measured crash). */
  readonly detectionP50Ms: number | null;
  readonly detectionP99Ms: number | null;
  /** Crash → `dead` at every live member, ms. */
  readonly detectionAllP50Ms: number | null;
  readonly detectionAllP99Ms: number | null;
  readonly detectionSamples: number;
  /** Crashes some observer never detected before the node came back (counted at the window). */
  readonly detectionCensored: number;
  /** `dead` verdicts about a running member, per node-hour (observers that were not stopped). */
  readonly falseDeadPerNodeHour: number;
  /** The same, about members that were not themselves degraded (slow, cut, partial). */
  readonly falseDeadHealthyPerNodeHour: number;
  readonly falseDead: number;
  readonly falseDeadHealthy: number;
  /** Distinct members falsely declared dead (30 s apart). */
  readonly falseDeadIncidents: number;
  /** Chen's λ_M: wrong suspicions (suspect or dead) of a responsive member per pair-hour. */
  readonly mistakeRatePerPairHour: number;
  /** Chen's P_A: the probability that a query about a responsive member answers "alive". */
  readonly queryAccuracy: number;
  /** suspect/dead → alive transitions per node-hour. */
  readonly flapsPerNodeHour: number;
  /** Longest target pause (of 0.5–30 s) that never produced `dead`, ms (pause scenario). */
  readonly pauseToleranceMs: number | null;
  /** Per pause length: the fraction of pauses that produced `dead` somewhere. */
  readonly pauseDeadFraction: Readonly<Record<string, number>> | null;
  /** p99 time from the end of a pause until no one suspects the member, ms. */
  readonly refuteP99Ms: number | null;
  /** Accusations by an observer in the 5 s after its own stall (observer-stall scenario). */
  readonly staleAccusations: number | null;
  readonly staleDead: number | null;
  /** One-way or UDP-only cuts reported as link-level unreachable, and how fast (p50, ms). */
  readonly linkCutsDetected: number | null;
  readonly linkCuts: number | null;
  readonly linkDetectP50Ms: number | null;
  /** Mass restart: from the last restart until every member sees every other alive, ms. */
  readonly convergenceMs: number | null;
  readonly packetsPerNodePerSecond: number;
  readonly nodeHours: number;
  readonly simEvents: number;
}

export interface Cell {
  readonly scenario: string;
  readonly detector: string;
  readonly n: number;
  readonly seed: number;
  readonly scale: number;
}

export interface EvalOptions {
  readonly sizes: readonly number[];
  readonly scenarios?: readonly string[];
  readonly detectors?: readonly string[];
  readonly seed: number;
  readonly scale: number;
}

/** The cells of the matrix, the most expensive first (for load balancing across workers). */
export function planCells(o: EvalOptions): Cell[] {
  const scen = SCENARIOS.filter((s) => o.scenarios === undefined || o.scenarios.includes(s.name));
  const dets = DETECTORS.filter((d) => o.detectors === undefined || o.detectors.includes(d.name));
  const cells: Cell[] = [];
  for (const s of scen) {
    for (const n of o.sizes) {
      const seed = fnvNumber(fnvString(FNV_OFFSET, s.name), n ^ o.seed);
      for (const d of dets)
        cells.push({ scenario: s.name, detector: d.name, n, seed, scale: o.scale });
    }
  }
  return cells.sort((a, b) => cost(b) - cost(a));
}

function cost(c: Cell): number {
  const weight = c.scenario.includes('crash') ? 3 : c.scenario === 'warm-up' ? 2 : 1;
  return c.n * c.n * 0.02 + c.n * weight * (c.detector === 'cassandra-phi' ? 1.5 : 1);
}

export function runCell(cell: Cell): EvalRow {
  const scenario = SCENARIOS.find((s) => s.name === cell.scenario);
  if (scenario === undefined) throw new Error(`unknown scenario ${cell.scenario}`);
  const plan = scenario.build(cell.n, prng(cell.seed).fork('faults'), cell.scale);
  const sim = new Simulation({
    n: cell.n,
    extraSlots: plan.extraSlots,
    seed: cell.seed,
    detector: detectorByName(cell.detector),
    network: scenario.network,
    warmupMs: 30_000,
    durationMs: plan.durationMs,
    faults: plan.faults,
    skewPpm: plan.skewPpm,
    convergenceFromMs: plan.convergenceFromMs,
  });
  const result = sim.run();
  return summarize(scenario, cell, result.metrics, result.events);
}

export function runEval(
  o: EvalOptions,
  onProgress?: (done: number, total: number, row: EvalRow) => void,
): EvalRow[] {
  const cells = planCells(o);
  const rows: EvalRow[] = [];
  for (const c of cells) {
    const row = runCell(c);
    rows.push(row);
    onProgress?.(rows.length, cells.length, row);
  }
  return sortRows(rows);
}

/** Rows in report order: scenario (catalogue order), size, detector (roster order). */
export function sortRows(rows: readonly EvalRow[]): EvalRow[] {
  const si = (s: string) => SCENARIOS.findIndex((x) => x.name === s);
  const di = (d: string) => DETECTORS.findIndex((x) => x.name === d);
  return [...rows].sort(
    (a, b) => si(a.scenario) - si(b.scenario) || a.n - b.n || di(a.detector) - di(b.detector),
  );
}

/** Nearest-rank quantile of unsorted samples; null for none. */
export function quantile(samples: readonly number[], q: number): number | null {
  if (samples.length === 0) return null;
  const s = [...samples].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1));
  return s[i] as number;
}

/** The longest stop length with no `dead` at it or at any shorter length; 0 if even 0.5 s failed. */
export function pauseTolerance(
  byLength: ReadonlyMap<number, { dead: number; total: number }>,
): number {
  let best = 0;
  for (const len of STOP_LENGTHS_MS) {
    const c = byLength.get(len);
    if (c === undefined || c.total === 0) continue;
    if (c.dead > 0) break;
    best = len;
  }
  return best;
}

function summarize(s: ScenarioSpec, cell: Cell, m: RunMetrics, events: number): EvalRow {
  const perNodeHour = (x: number) => (m.nodeHours > 0 ? x / m.nodeHours : 0);
  const crash = m.detectionFirstMs.length > 0;
  let pauseToleranceMs: number | null = null;
  let pauseDeadFraction: Record<string, number> | null = null;
  let refuteP99Ms: number | null = null;
  if (s.kind === 'pause') {
    const byLength = new Map<number, { dead: number; total: number }>();
    for (const st of m.stops.filter((x) => x.kind === 'pause')) {
      const len = nearestLength(st.lengthMs);
      const c = byLength.get(len) ?? { dead: 0, total: 0 };
      c.total++;
      if (st.dead) c.dead++;
      byLength.set(len, c);
    }
    pauseToleranceMs = pauseTolerance(byLength);
    pauseDeadFraction = {};
    for (const len of STOP_LENGTHS_MS) {
      const c = byLength.get(len);
      if (c !== undefined) pauseDeadFraction[`${len}`] = round(c.dead / c.total, 3);
    }
    const refutes = m.stops
      .filter((x) => x.kind === 'pause' && x.lengthMs <= 3000 && x.refuteMs !== null)
      .map((x) => x.refuteMs as number);
    refuteP99Ms = quantile(refutes, 0.99);
  }
  let staleAccusations: number | null = null;
  let staleDead: number | null = null;
  if (s.kind === 'stall') {
    const st = m.stops.filter((x) => x.kind === 'stall');
    staleAccusations = st.reduce((a, x) => a + x.staleAccusations, 0);
    staleDead = st.reduce((a, x) => a + x.staleDead, 0);
  }
  const part = s.kind === 'partition' && m.linkCuts > 0;
  const secondsUp = m.nodeHours * 3600;
  return {
    scenario: cell.scenario,
    kind: s.kind,
    detector: cell.detector,
    n: cell.n,
    detectionP50Ms: crash ? roundMs(quantile(m.detectionFirstMs, 0.5)) : null,
    detectionP99Ms: crash ? roundMs(quantile(m.detectionFirstMs, 0.99)) : null,
    detectionAllP50Ms: crash ? roundMs(quantile(m.detectionAllMs, 0.5)) : null,
    detectionAllP99Ms: crash ? roundMs(quantile(m.detectionAllMs, 0.99)) : null,
    detectionSamples: m.detectionFirstMs.length,
    detectionCensored: m.detectionCensored,
    falseDeadPerNodeHour: round(perNodeHour(m.falseDead), 4),
    falseDeadHealthyPerNodeHour: round(perNodeHour(m.falseDeadHealthy), 4),
    falseDead: m.falseDead,
    falseDeadHealthy: m.falseDeadHealthy,
    falseDeadIncidents: m.falseDeadIncidents,
    mistakeRatePerPairHour: round(m.pairHours > 0 ? m.mistakes / m.pairHours : 0, 6),
    queryAccuracy: round(m.pairHours > 0 ? 1 - m.mistakeMs / (m.pairHours * 3_600_000) : 1, 8),
    flapsPerNodeHour: round(perNodeHour(m.flaps), 3),
    pauseToleranceMs,
    pauseDeadFraction,
    refuteP99Ms: roundMs(refuteP99Ms),
    staleAccusations,
    staleDead,
    linkCutsDetected: part ? m.linkDetectMs.length : null,
    linkCuts: part ? m.linkCuts : null,
    linkDetectP50Ms: part ? roundMs(quantile(m.linkDetectMs, 0.5)) : null,
    convergenceMs: s.kind === 'restart' ? roundMs(m.convergenceMs) : null,
    packetsPerNodePerSecond: round(secondsUp > 0 ? m.packets / secondsUp : 0, 3),
    nodeHours: round(m.nodeHours, 3),
    simEvents: events,
  };
}

function nearestLength(ms: number): number {
  let best: number = STOP_LENGTHS_MS[0];
  for (const l of STOP_LENGTHS_MS) if (Math.abs(l - ms) < Math.abs(best - ms)) best = l;
  return best;
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function roundMs(x: number | null): number | null {
  return x === null ? null : Math.round(x);
}
