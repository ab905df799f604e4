// What every workload offers the run: it drives the cluster through the SDK until its signal
// aborts, then hands its recorded history to its checker from src/check.
import type { Prng } from '../../core/base/prng.js';
import type { Anomaly } from '../anomaly.js';
import type { ClockWindows } from '../clock-windows.js';
import type { Members } from '../members.js';
import type { Timeline } from '../timeline.js';

/** What a workload is built with. */
export interface WorkloadContext {
  /** Client URLs by member index. */
  readonly endpoints: readonly string[];
  /** The workload's own stream (forked from the run's seed by the workload's name). */
  readonly prng: Prng;
  readonly timeline: Timeline;
  /** Clock-rate skews the nemesis ran, for checkers whose verdict rests on clocks. */
  readonly clocks: ClockWindows;
  /** The members (PIDs, logs), for workloads that look at them. */
  readonly members: Members;
}

export interface WorkloadResult {
  readonly name: string;
  /** Operations recorded. */
  readonly ops: number;
  /** Of those, with an unknown outcome (a write that may or may not have been applied). */
  readonly unknown: number;
  /** 'undecided': the checker's budget ran out before a verdict. */
  readonly verdict: 'ok' | 'anomalies' | 'undecided';
  readonly detail?: string;
  readonly anomalies: readonly Anomaly[];
}

export interface Workload {
  readonly name: string;
  /** Operations so far (for the progress line). */
  readonly opsSoFar: number;
  /** Drive the cluster until `signal` aborts; resolves once every client has stopped. */
  run(signal: AbortSignal): Promise<void>;
  /** Judge what was recorded (after run). */
  check(): WorkloadResult;
}
