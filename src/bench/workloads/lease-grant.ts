// d. Lease grant: `client.lease(5, { autoKeepAlive: false }).grant()`, 64 in flight; the leases
// are revoked afterwards (unmeasured).
import type { Lease } from 'etcd3';
import { inflight, leaseTtlSeconds, workloadTimeCapMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { closedLoop, runAll } from './closed-loop.js';
import type { Workload } from './workload.js';

export const leaseGrant: Workload = {
  name: 'lease-grant',
  title: `lease grant (TTL ${leaseTtlSeconds} s), ${inflight} in flight`,
  opName: 'grant',
  latencyName: 'grant latency',
  cpuPerOp: true,
  async prepare(ctx) {
    const client = poolClient(ctx.endpoints, ctx.tls);
    const leases: Lease[] = [];
    const grant = async (): Promise<void> => {
      const lease = client.lease(leaseTtlSeconds, { autoKeepAlive: false });
      leases.push(lease);
      await lease.grant();
    };
    await runAll(ctx.sizes.warmupOps, inflight, grant);
    return {
      measure: () =>
        closedLoop({
          concurrency: inflight,
          count: ctx.sizes.leases,
          timeCapMs: workloadTimeCapMs,
          op: grant,
        }),
      cleanup: async () => {
        await runAll(leases.length, inflight, (i) =>
          (leases[i] as Lease).revoke().catch(() => undefined),
        );
        client.close();
      },
    };
  },
};
