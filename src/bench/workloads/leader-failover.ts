// f. Leader failover: under a light put load, find the leader with Maintenance.Status, kill -9
// it, and time the first successful put through a survivor. Probes: a put every 10 ms (2 s
// deadline each), alternating between two single-endpoint clients on the survivors with etcd3's
// retry and circuit-breaker policies disabled (baseline f). Then the killed member is restarted
// on its data directory and the cluster must agree on a leader before the next sample.
import type { Etcd3 } from 'etcd3';
import {
  failoverGiveUpMs,
  failoverLoadLeadMs,
  failoverLoadWorkers,
  probeDeadlineMs,
  probeIntervalMs,
  readyTimeoutMs,
} from '../config.js';
import { bareClient } from '../etcd3-clients.js';
import { leaderIndex, statuses } from '../leader.js';
import { key, randomValue } from './keys.js';
import { sampledWorkload } from './samples.js';
import type { Workload, WorkloadContext } from './workload.js';

/** A background writer: sequential puts through any endpoint, errors ignored, until stopped. */
function backgroundLoad(ctx: WorkloadContext, stop: AbortSignal): Promise<void> {
  const client = bareClient(ctx.endpoints, probeDeadlineMs, ctx.tls);
  const value = randomValue();
  let n = 0;
  const worker = async (w: number): Promise<void> => {
    while (!stop.aborted) {
      await client
        .put(key('g', ctx.tag, w * 1e8 + n++))
        .value(value)
        .exec()
        .catch(() => new Promise((r) => setTimeout(r, probeIntervalMs)));
    }
  };
  return Promise.all(Array.from({ length: failoverLoadWorkers }, (_, w) => worker(w))).then(() =>
    client.close(),
  );
}

/** One sample: kill -9 the leader, ms until the first put through a survivor succeeded. */
async function oneFailover(ctx: WorkloadContext, sample: number): Promise<number> {
  const leader = leaderIndex(await statuses(ctx.endpoints, ctx.tls));
  if (leader === undefined) throw new Error('no agreed leader before the kill');
  const survivors = ctx.endpoints.filter((_, i) => i !== leader);
  const probes: Etcd3[] = survivors.map((e) => bareClient([e], probeDeadlineMs, ctx.tls));
  const value = randomValue();
  const stopLoad = new AbortController();
  const load = backgroundLoad(ctx, stopLoad.signal);
  try {
    await new Promise((r) => setTimeout(r, failoverLoadLeadMs));
    const killedAt = performance.now();
    await ctx.members.kill(leader, 'SIGKILL');
    const okAt = await new Promise<number>((resolve, reject) => {
      let n = 0;
      let done = false;
      const giveUp = setTimeout(() => {
        done = true;
        clearInterval(timer);
        reject(new Error(`no put succeeded within ${failoverGiveUpMs} ms of the kill`));
      }, failoverGiveUpMs);
      const timer = setInterval(() => {
        const i = n++;
        const probe = probes[i % probes.length] as Etcd3;
        probe
          .put(key('f', ctx.tag, sample * 1e6 + i))
          .value(value)
          .exec()
          .then(
            () => {
              if (done) return;
              done = true;
              clearInterval(timer);
              clearTimeout(giveUp);
              resolve(performance.now());
            },
            () => undefined,
          );
      }, probeIntervalMs);
    });
    return okAt - killedAt;
  } finally {
    stopLoad.abort();
    await load;
    for (const p of probes) p.close();
    await ctx.members.restart(leader);
    await ctx.members.waitReady(readyTimeoutMs);
  }
}

export const leaderFailover: Workload = {
  name: 'leader-failover',
  title: 'leader kill -9 → first put via a survivor',
  opName: 'failover',
  latencyName: 'failover time',
  cpuPerOp: false,
  prepare(ctx) {
    // After a failed sample go on only with a healthy cluster; otherwise the run fails here.
    return sampledWorkload(
      'leader failover',
      ctx.sizes.failoverSamples,
      (s) => oneFailover(ctx, s),
      () => ctx.members.waitReady(readyTimeoutMs),
    );
  },
};
