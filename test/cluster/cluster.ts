// Real clusters for tests: 1 or 3 members of Debian's etcd 3.4 or of tenure, started by the
// launcher (src/launcher) with the same etcd flags on 127.0.0.1 ports chosen by the OS, data in
// temporary directories, output kept in memory for diagnostics, every process stopped by PID.
// The same test can then run against either system.
//
//   const cluster = await startCluster({ kind: 'etcd', size: 3 });
//   try { ... cluster.endpoints ... } finally { await cluster.stop(); }
import { startCluster as launch, type Cluster } from '../../src/launcher/cluster.js';
import type { MemberKind } from '../../src/launcher/member-command.js';

export { etcdctl, EtcdctlProcess, type EtcdctlResult } from './etcdctl.js';
export type { Cluster } from '../../src/launcher/cluster.js';

export type BackendKind = MemberKind;

export interface ClusterOptions {
  readonly kind: BackendKind;
  /** Members; 3 for the compatibility suites. */
  readonly size: 1 | 3;
  /** Where the temporary data directories go (a fresh subdirectory is made); default os.tmpdir(). */
  readonly dataRoot?: string;
  /** Extra environment for every member process. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Raft timing. etcd always gets these flags, with etcd's defaults (100 ms, 1000 ms). tenure
   * gets them only when set here, so its flag surface stays the one listed in the README.
   */
  readonly heartbeatIntervalMs?: number;
  readonly electionTimeoutMs?: number;
  /** Extra flags for every member, after the common ones. */
  readonly extraArgs?: readonly string[];
  /** startCluster waits this long for the cluster to serve reads; default 30 000 ms; 0 = don't. */
  readonly readyTimeoutMs?: number;
}

/**
 * Start a cluster and (unless readyTimeoutMs is 0) wait until every member serves linearizable
 * reads. On failure every process is stopped and the data removed before the error is thrown.
 */
export function startCluster(options: ClusterOptions): Promise<Cluster> {
  return launch({
    kind: options.kind,
    size: options.size,
    memberName: (i) => `n${i}`,
    logs: 'ring',
    // A test run's NODE_OPTIONS (coverage, inspectors) is meant for the members too.
    keepNodeOptions: true,
    command: {
      ...(options.heartbeatIntervalMs === undefined
        ? {}
        : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
      ...(options.electionTimeoutMs === undefined
        ? {}
        : { electionTimeoutMs: options.electionTimeoutMs }),
      ...(options.extraArgs === undefined ? {} : { extraArgs: options.extraArgs }),
    },
    ...(options.dataRoot === undefined ? {} : { tmpRoot: options.dataRoot }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
  });
}
