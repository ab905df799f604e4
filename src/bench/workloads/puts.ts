// Puts through the etcd3 client, a random endpoint per call (2/3 land on followers and are
// forwarded to the leader): the shared body of the sequential and the 64-in-flight put
// workloads (one file each), as get-throughput.ts is for the gets.
import { workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import { key, randomValue } from './keys.js';
import type { Prepared, WorkloadContext } from './workload.js';

/** `count` puts of fresh keys (`letter`), `concurrency` at a time, after an unmeasured warm-up. */
export async function preparePuts(
  ctx: WorkloadContext,
  letter: string,
  concurrency: number,
  count: number,
): Promise<Prepared> {
  const client = poolClient(ctx.endpoints, ctx.tls);
  const value = randomValue();
  const put = (i: number): Promise<unknown> =>
    client
      .put(key(letter, ctx.tag, i))
      .value(value)
      .exec();
  await runAll(ctx.sizes.warmupOps, concurrency, (i) => put(9e9 + i));
  return {
    measure: () => closedLoop({ concurrency, count, timeCapMs: workloadTimeCapMs, op: put }),
    cleanup: () => Promise.resolve(client.close()),
  };
}
