// c. Linearizable get, 64 in flight, 1000-key space (each waits for a ReadIndex round).
import { inflight } from '../config.js';
import { prepareGets } from './get-throughput.js';
import type { Workload } from './workload.js';

export const getLinearizable: Workload = {
  name: 'get-linearizable',
  title: `linearizable get, ${inflight} in flight`,
  opName: 'get',
  latencyName: 'get latency',
  cpuPerOp: true,
  prepare: (ctx) => prepareGets(ctx, false),
};
