// a. Sequential put: one client, one put at a time, a random endpoint per call (2/3 of the puts
// land on followers and are forwarded to the leader).
import { preparePuts } from './puts.js';
import type { Workload } from './workload.js';

export const seqPut: Workload = {
  name: 'seq-put',
  title: 'sequential put, 1 client',
  opName: 'put',
  latencyName: 'put latency',
  cpuPerOp: true,
  prepare: (ctx) => preparePuts(ctx, 'a', 1, ctx.sizes.seqPuts),
};
