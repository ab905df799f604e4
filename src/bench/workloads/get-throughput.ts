// c. Get throughput, 64 in flight, over a preloaded 1000-key space: the shared body of the
// linearizable and the serializable get workloads (one file each).
import { inflight, workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import { key, randomValue } from './keys.js';
import type { Prepared, WorkloadContext } from './workload.js';

export async function prepareGets(ctx: WorkloadContext, serializable: boolean): Promise<Prepared> {
  const client = poolClient(ctx.endpoints, ctx.tls);
  const value = randomValue();
  const space = ctx.sizes.getKeySpace;
  const letter = serializable ? 's' : 'c';
  await runAll(space, inflight, (i) =>
    client
      .put(key(letter, ctx.tag, i))
      .value(value)
      .exec(),
  );
  const get = (i: number): Promise<unknown> =>
    client
      .get(key(letter, ctx.tag, i % space))
      .serializable(serializable)
      .buffer();
  await runAll(ctx.sizes.warmupOps, inflight, get);
  return {
    measure: () =>
      closedLoop({
        concurrency: inflight,
        count: ctx.sizes.gets,
        timeCapMs: workloadTimeCapMs,
        // A fixed stride spreads consecutive gets over the key space.
        op: (i) => get(i * 7919),
      }),
    cleanup: () => Promise.resolve(client.close()),
  };
}
