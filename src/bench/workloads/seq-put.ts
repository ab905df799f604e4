// a. Sequential put: one client, one put at a time, a random endpoint per call (2/3 of the puts
// land on followers and are forwarded to the leader).
import { workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import { key, randomValue } from './keys.js';
import type { Workload } from './workload.js';

export const seqPut: Workload = {
  name: 'seq-put',
  title: 'sequential put, 1 client',
  opName: 'put',
  latencyName: 'put latency',
  cpuPerOp: true,
  async prepare(ctx) {
    const client = poolClient(ctx.endpoints);
    const value = randomValue();
    await runAll(ctx.sizes.warmupOps, 1, (i) =>
      client
        .put(key('a', ctx.tag, 9e9 + i))
        .value(value)
        .exec(),
    );
    return {
      measure: () =>
        closedLoop({
          concurrency: 1,
          count: ctx.sizes.seqPuts,
          timeCapMs: workloadTimeCapMs,
          op: (i) =>
            client
              .put(key('a', ctx.tag, i))
              .value(value)
              .exec(),
        }),
      cleanup: () => Promise.resolve(client.close()),
    };
  },
};
