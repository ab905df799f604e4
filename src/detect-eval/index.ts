// The evaluation harness: seeded discrete-event scenarios that run every detector — tenure's and
// the calibrated baselines — at the same message budget, and the report built from them. An
// application over the pure detectors of src/core/detect, run by `bin/tenure detect eval`
// (src/cli/detect.ts); deterministic, so the same seed gives the same figures.

export { DETECTORS, detectorByName } from './detectors.js';
export type { DetectorSpec, SimNode, Verdict } from './detectors.js';
export { planCells, runCell, runEval, sortRows, quantile, pauseTolerance } from './harness.js';
export type { Cell, EvalOptions, EvalRow } from './harness.js';
export { SCENARIOS, scenarioByName, STOP_LENGTHS_MS } from './scenarios.js';
export type { ScenarioSpec } from './scenarios.js';
export { Simulation } from './sim.js';
export type { Fault, SimConfig } from './sim.js';
export { checkTargets, jsonReport, markdownReport, svgPlot } from './report.js';
export type { EvalReport, TargetResult } from './report.js';
