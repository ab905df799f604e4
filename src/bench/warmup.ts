// An unmeasured warm-up of each fresh cluster before its first workload, the same for both
// systems: puts, linearizable and serializable gets, lease grants with keepalives and revokes,
// and a watch, through the same etcd3 client the workloads use. A JIT runtime compiles its hot
// paths during the first few thousand requests (on the project's machine a tenure member still
// spent about a sixth of its CPU in V8's optimizing compiler 5,000 puts after start); a
// benchmark of steady state lets that settle first, as JMH's warm-up iterations do. etcd, a
// compiled Go binary, gains nothing from it and loses nothing.
import type { Lease } from 'etcd3';
import { inflight, leaseTtlSeconds } from './config.js';
import { poolClient } from './etcd3-clients.js';
import { runAll } from './workloads/closed-loop.js';
import { key, randomValue } from './workloads/keys.js';

/** Run `ops` of each kind against `endpoints`; keys use the letter `w` and the run's tag. */
export async function warmUpCluster(
  endpoints: readonly string[],
  tag: string,
  ops: number,
): Promise<void> {
  if (ops <= 0) return;
  const client = poolClient(endpoints);
  try {
    const value = randomValue();
    const watcher = await client
      .watch()
      .prefix(key('w', tag, 0).slice(0, 6))
      .create();
    try {
      await runAll(ops, inflight, (i) =>
        client
          .put(key('w', tag, i % 1000))
          .value(value)
          .exec(),
      );
    } finally {
      await watcher.cancel();
    }
    for (const serializable of [false, true]) {
      await runAll(ops, inflight, (i) =>
        client
          .get(key('w', tag, i % 1000))
          .serializable(serializable)
          .buffer(),
      );
    }
    const leaseCount = Math.max(1, Math.floor(ops / 10));
    const leases = Array.from({ length: leaseCount }, () =>
      client.lease(leaseTtlSeconds, { autoKeepAlive: false }),
    );
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).grant());
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).keepaliveOnce());
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).revoke());
    await client
      .delete()
      .prefix(key('w', tag, 0).slice(0, 6))
      .exec();
  } finally {
    client.close();
  }
}
