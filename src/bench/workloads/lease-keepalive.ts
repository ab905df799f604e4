// d. Lease keepalive: etcd3's `keepaliveOnce()` (its only one-shot keepalive; it opens a
// LeaseKeepAlive stream per call) on each of 1000 granted leases, 64 in flight. Granting before
// and revoking after are unmeasured.
import type { Lease } from 'etcd3';
import { inflight, leaseTtlSeconds, workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import type { Workload } from './workload.js';

export const leaseKeepalive: Workload = {
  name: 'lease-keepalive',
  title: `lease keepaliveOnce, ${inflight} in flight`,
  opName: 'keepalive',
  latencyName: 'keepalive latency',
  cpuPerOp: true,
  async prepare(ctx) {
    const client = poolClient(ctx.endpoints, ctx.tls);
    const count = ctx.sizes.leases;
    const leases = Array.from({ length: count }, () =>
      client.lease(leaseTtlSeconds, { autoKeepAlive: false }),
    );
    await runAll(count, inflight, (i) => (leases[i] as Lease).grant());
    await runAll(ctx.sizes.warmupOps, inflight, (i) =>
      (leases[i % count] as Lease).keepaliveOnce(),
    );
    let expired = 0;
    return {
      measure: async () => {
        const m = await closedLoop({
          concurrency: inflight,
          count,
          timeCapMs: workloadTimeCapMs,
          op: async (i) => {
            const r = await (leases[i] as Lease).keepaliveOnce();
            if (Number(r.TTL) <= 0) expired++;
          },
        });
        return { ...m, extra: { expired } };
      },
      cleanup: async () => {
        await runAll(count, inflight, (i) => (leases[i] as Lease).revoke().catch(() => undefined));
        client.close();
      },
    };
  },
};
