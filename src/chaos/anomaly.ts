// One thing a run found wrong: which workload's checker (or the harness itself, for a cluster
// that never recovered or a cut that did not hold), what, when, and the operations that show it.
// The report (report.ts) adds the nemesis steps before it and the member log lines around it.

export interface Anomaly {
  /** The workload whose checker found it, or 'cluster' for what the harness saw itself. */
  readonly workload: string;
  /** The checker's name for it: linearizability, no-recovery, cut-not-seen, … */
  readonly kind: string;
  readonly message: string;
  /** When it became visible, on the run's clock (performance.now()). */
  readonly atMs: number;
  /** The operations that show it, one per line, times relative to the run's start. */
  readonly excerpt: readonly string[];
}
