// Every workload, in the order a run executes them. The failover workloads come last: they kill
// and restart members, and the leader kill leaves restarted processes behind.
import { electionFailover } from './election-failover.js';
import { getLinearizable } from './get-linearizable.js';
import { getSerializable } from './get-serializable.js';
import { leaderFailover } from './leader-failover.js';
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

export const allWorkloads: readonly Workload[] = [
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
