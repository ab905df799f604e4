// What a workload is: a definition (name, units) and three phases. The runner (run.ts) wraps only
// the measured phase with the CPU sampling, so set-up (preloading keys, connecting watchers,
// warm-up) and clean-up (revoking leases, closing clients) are not counted.
import type { BenchTlsFiles } from '../tls.js';
import type { BenchSizes } from '../config.js';
import type { SystemKind } from '../cluster.js';

/** What every workload gets. */
export interface WorkloadContext {
  readonly kind: SystemKind;
  /** Client URLs of the 3 members, by member index (for postgres: its one connection URL). */
  readonly endpoints: readonly string[];
  /** Current member PIDs (undefined while a member is down). */
  readonly pids: ReadonlyArray<number | undefined>;
  /** Member control, for the failover workloads. */
  readonly members: MemberControl;
  readonly sizes: BenchSizes;
  /**
   * `--tls`: the members serve https:// with client certificates required; every client of the
   * workload must trust this CA and present this certificate. Undefined: plain http://.
   */
  readonly tls?: BenchTlsFiles;
  /** Three characters that make this run's keys unique (keys are 16 bytes, baseline format). */
  readonly tag: string;
}

export interface MemberControl {
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  restart(i: number): Promise<void>;
  /** Wait until all members agree on a leader; its index. */
  waitReady(timeoutMs?: number): Promise<number>;
}

/** The outcome of a measured phase. */
export interface Measurement {
  /** Completed operations (puts, gets, events delivered, lock cycles, failover samples). */
  readonly ops: number;
  readonly errors: number;
  readonly durationMs: number;
  /** null where a rate means nothing (failover samples). */
  readonly opsPerSec: number | null;
  /** One latency sample per operation, in ms (for failover: the failover times). */
  readonly latenciesMs: readonly number[];
  /** Workload-specific figures (e.g. lock violations, events missed), for the JSON. */
  readonly extra?: Readonly<Record<string, number>>;
}

export interface Prepared {
  measure(): Promise<Measurement>;
  cleanup(): Promise<void>;
}

/** A figure of `Measurement.extra` the reports show as a row of its own (median over rounds). */
export interface ExtraRow {
  readonly key: string;
  readonly label: string;
  readonly better: 'higher' | 'lower';
}

export interface Workload {
  /** Stable identifier, used in JSON, file names and `--workloads`. */
  readonly name: string;
  /** One line for tables. */
  readonly title: string;
  /** What an operation is, for "ops/s" and "CPU µs per op" (e.g. 'put', 'event', 'cycle'). */
  readonly opName: string;
  /** What the latency samples measure. */
  readonly latencyName: string;
  /**
   * False for workloads that kill members: a killed process takes its CPU time with it, so no
   * per-operation CPU figure is reported.
   */
  readonly cpuPerOp: boolean;
  /** True if the workload can drive PostgreSQL (tenure/pg); the others are skipped there. */
  readonly postgres?: boolean;
  /** `extra` figures shown as table rows, after the latency rows. */
  readonly extraRows?: readonly ExtraRow[];
  prepare(ctx: WorkloadContext): Promise<Prepared>;
}
