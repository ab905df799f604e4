// b. Put throughput: 64 puts in flight from one client, a random endpoint per call.
import { inflight } from '../config.js';
import { preparePuts } from './puts.js';
import type { Workload } from './workload.js';

export const putThroughput: Workload = {
  name: 'put-throughput',
  title: `put, ${inflight} in flight`,
  opName: 'put',
  latencyName: 'put latency',
  cpuPerOp: true,
  prepare: (ctx) => preparePuts(ctx, 'b', inflight, ctx.sizes.throughputPuts),
};
