// Every workload, in the order a run executes them. The failover workloads come last: they kill
// and restart members, and the leader kill leaves restarted processes behind. The disruption
// workloads of issue 19 (leader-failover-sdk, leader-pause-*, rolling-restart, lock-failover)
// run only when named: at full size they take minutes per system, more than the default run's
// budget (config.ts).
import { electionFailover } from './election-failover.js';
import { getLinearizable } from './get-linearizable.js';
import { getSerializable } from './get-serializable.js';
import { leaderFailover, leaderFailoverSdk } from './leader-failover.js';
import { leaderPauses } from './leader-pause.js';
import { lockFailover } from './lock-failover.js';
import { rollingRestart } from './rolling-restart.js';
import { leaseGrant } from './lease-grant.js';
import { leaseKeepalive } from './lease-keepalive.js';
import { lockHandoff } from './lock-handoff.js';
import { putThroughput } from './put-throughput.js';
import { seqPut } from './seq-put.js';
import { watchFanout } from './watch-fanout.js';
import type { Workload } from './workload.js';

export type {
  Workload,
  WorkloadContext,
  Measurement,
  Prepared,
  MemberControl,
  ExtraRow,
} from './workload.js';

/** What a run without --workloads executes. */
export const defaultWorkloads: readonly Workload[] = [
  seqPut,
  putThroughput,
  getLinearizable,
  getSerializable,
  leaseGrant,
  leaseKeepalive,
  lockHandoff,
  watchFanout,
  electionFailover,
  leaderFailover,
];

/** Run only when named (or through a group below). */
export const disruptionWorkloads: readonly Workload[] = [
  leaderFailoverSdk,
  ...leaderPauses,
  rollingRestart,
  lockFailover,
];

export const allWorkloads: readonly Workload[] = [...defaultWorkloads, ...disruptionWorkloads];

/** Names `--workloads` expands to several workloads. */
export const workloadGroups: Readonly<Record<string, readonly Workload[]>> = {
  'leader-pause': leaderPauses,
  disruption: disruptionWorkloads,
};
