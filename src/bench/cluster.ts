// The bench's 3-member clusters of etcd or tenure, started by the launcher (src/launcher) with the
// same etcd flags and pinned Raft timing for both, member output in log files in the cluster's
// temporary directory (not through a pipe, so the bench process pays nothing for it). A launch
// failure is a BenchSetupError, which the CLI reports as a setup problem.
import { LaunchError } from '../launcher/errors.js';
import { startCluster, type Cluster, type ClusterOptions } from '../launcher/cluster.js';
import { findEtcd, type MemberKind } from '../launcher/member-command.js';
import {
  electionTimeoutMs,
  fastElectionTimeoutMs,
  fastHeartbeatIntervalMs,
  heartbeatIntervalMs,
  readyTimeoutMs,
} from './config.js';
import { BenchSetupError } from './errors.js';

export type { Cluster } from '../launcher/cluster.js';
/**
 * The systems a bench compares: the two etcd-API clusters, etcd with fast Raft timing
 * (`--etcd-timing 50/500`), and PostgreSQL (lock-handoff only).
 */
export type SystemKind = MemberKind | 'etcd-50/500' | 'postgres';
export type ClusterSystemKind = Exclude<SystemKind, 'postgres'>;

/** Raft timing of one system of the run, in ms; null for PostgreSQL. */
export interface RaftTiming {
  readonly heartbeatIntervalMs: number;
  readonly electionTimeoutMs: number;
}

/** The timing each cluster system runs with; tenure and etcd both at etcd's defaults. */
export function timingOf(kind: SystemKind): RaftTiming | null {
  if (kind === 'postgres') return null;
  if (kind === 'etcd-50/500') {
    return {
      heartbeatIntervalMs: fastHeartbeatIntervalMs,
      electionTimeoutMs: fastElectionTimeoutMs,
    };
  }
  return { heartbeatIntervalMs, electionTimeoutMs };
}

/** The launcher's member kind of a cluster system. */
export function memberKindOf(kind: ClusterSystemKind): MemberKind {
  return kind === 'etcd-50/500' ? 'etcd' : kind;
}

export interface BenchClusterOptions {
  readonly kind: ClusterSystemKind;
  /**
   * Extra `node` arguments for tenure members only, before `bin/tenure` (e.g. `--cpu-prof
   * --cpu-prof-dir=/tmp/prof`, which Node 20 refuses in NODE_OPTIONS). Ignored for etcd.
   */
  readonly memberNodeArgs?: readonly string[];
  /** `--tls`: client and peer certificates (cli/cluster-tls.ts), and the readiness probe's. */
  readonly tls?: ClusterOptions['tls'];
}

function setupError(e: unknown): unknown {
  return e instanceof LaunchError ? new BenchSetupError(e.message) : e;
}

/** Throw a BenchSetupError naming the Debian package unless etcd is installed. */
export function requireEtcd(): void {
  try {
    findEtcd();
  } catch (e) {
    throw setupError(e);
  }
}

/**
 * Start a 3-member cluster and wait until it is ready. On failure every process is stopped and
 * the data removed before the error is thrown.
 */
export async function startBenchCluster(options: BenchClusterOptions): Promise<Cluster> {
  try {
    return await startCluster({
      kind: memberKindOf(options.kind),
      size: 3,
      logs: 'file',
      command: {
        ...timingOf(options.kind),
        ...(options.memberNodeArgs === undefined ? {} : { nodeArgs: options.memberNodeArgs }),
      },
      readyTimeoutMs,
      ...(options.tls === undefined ? {} : { tls: options.tls }),
    });
  } catch (e) {
    throw setupError(e);
  }
}
