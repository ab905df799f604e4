// b. Put throughput: 64 puts in flight from one client, a random endpoint per call.
import { inflight, workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import { key, randomValue } from './keys.js';
import type { Workload } from './workload.js';

export const putThroughput: Workload = {
  name: 'put-throughput',
  title: `put, ${inflight} in flight`,
  opName: 'put',
  latencyName: 'put latency',
  cpuPerOp: true,
  async prepare(ctx) {
    const client = poolClient(ctx.endpoints);
    const value = randomValue();
    await runAll(ctx.sizes.warmupOps, inflight, (i) =>
      client
        .put(key('b', ctx.tag, 9e9 + i))
        .value(value)
        .exec(),
    );
    return {
      measure: () =>
        closedLoop({
          concurrency: inflight,
          count: ctx.sizes.throughputPuts,
          timeCapMs: workloadTimeCapMs,
          op: (i) =>
            client
              .put(key('b', ctx.tag, i))
              .value(value)
              .exec(),
        }),
      cleanup: () => Promise.resolve(client.close()),
    };
  },
};
