// c'. Serializable get, 64 in flight, 1000-key space (answered from the member's local state).
import { inflight } from '../config.js';
import { prepareGets } from './get-throughput.js';
import type { Workload } from './workload.js';

export const getSerializable: Workload = {
  name: 'get-serializable',
  title: `serializable get, ${inflight} in flight`,
  opName: 'get',
  latencyName: 'get latency',
  cpuPerOp: true,
  prepare: (ctx) => prepareGets(ctx, true),
};
