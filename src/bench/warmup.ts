// An unmeasured warm-up of each fresh cluster before its first workload, the same for both
// systems: puts, linearizable and serializable gets, lease grants with keepalives and revokes,
// and a watch, through the same etcd3 client the workloads use. A JIT runtime compiles its hot
// paths during the first few thousand requests (on the project's machine a tenure member still
// spent about a sixth of its CPU in V8's optimizing compiler 5,000 puts after start); a
// benchmark of steady state lets that settle first, as JMH's warm-up iterations do. etcd, a
// compiled Go binary, gains nothing from it and loses nothing.
import type { Lease } from 'etcd3';
import type { BenchTlsFiles } from './tls.js';
import { inflight, leaseTtlSeconds } from './config.js';
import { poolClient } from './etcd3-clients.js';
import { runAll } from './workloads/closed-loop.js';
import { key, randomValue } from './workloads/keys.js';

/** Keys cycled through by the warm-up's puts and gets. */
const warmupKeySpace = 1000;

/** Lease grants (with a keepalive and a revoke each) in a warm-up of `ops` operations. */
export function warmupLeaseCount(ops: number): number {
  return Math.max(1, Math.floor(ops / 10));
}

/**
 * Run `ops` of each kind against `endpoints`; keys use the letter `u` (no workload uses it) and
 * the run's tag.
 */
export async function warmUpCluster(
  endpoints: readonly string[],
  tag: string,
  ops: number,
  tls?: BenchTlsFiles,
): Promise<void> {
  if (ops <= 0) return;
  const client = poolClient(endpoints, tls);
  const at = (i: number): string => key('u', tag, i % warmupKeySpace);
  const prefix = at(0).slice(0, -10); // without the 10-digit index
  try {
    const value = randomValue();
    const watcher = await client.watch().prefix(prefix).create();
    try {
      await runAll(ops, inflight, (i) => client.put(at(i)).value(value).exec());
    } finally {
      await watcher.cancel();
    }
    for (const serializable of [false, true]) {
      await runAll(ops, inflight, (i) => client.get(at(i)).serializable(serializable).buffer());
    }
    const leaseCount = warmupLeaseCount(ops);
    const leases = Array.from({ length: leaseCount }, () =>
      client.lease(leaseTtlSeconds, { autoKeepAlive: false }),
    );
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).grant());
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).keepaliveOnce());
    await runAll(leaseCount, inflight, (i) => (leases[i] as Lease).revoke());
    await client.delete().prefix(prefix).exec();
  } finally {
    client.close();
  }
}
