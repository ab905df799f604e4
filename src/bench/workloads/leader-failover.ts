// f. Leader failover: under a light put load, find the leader with Maintenance.Status, kill -9
// it, and time the first successful put through a survivor. Probes: a put every 10 ms (2 s
// deadline each), alternating between two single-endpoint clients on the survivors with etcd3's
// retry and circuit-breaker policies disabled (baseline f). Then the killed member is restarted
// on its data directory and the cluster must agree on a leader before the next sample.
//
// leader-failover-sdk (issue 19): the same kill, with the probes sent by tenure's SDK (one
// `connect` client over every endpoint, its own failover, 2 s bound per put): the time an
// application on the SDK waits for its first acknowledged write, not only the server's.
import { setMaxListeners } from 'node:events';
import type { Etcd3 } from 'etcd3';
import { connect } from '../../client/index.js';
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
export function backgroundLoad(ctx: WorkloadContext, stop: AbortSignal): Promise<void> {
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

/** What sends the probe puts of one sample. */
interface Prober {
  /** Put probe number `i`; resolves once acknowledged. */
  put(k: string, value: Buffer, i: number): Promise<unknown>;
  close(): Promise<void>;
}

/** Baseline f: two bare etcd3 clients, one per survivor, alternating. */
function etcd3Prober(ctx: WorkloadContext, leader: number): Promise<Prober> {
  const survivors = ctx.endpoints.filter((_, i) => i !== leader);
  const probes: Etcd3[] = survivors.map((e) => bareClient([e], probeDeadlineMs, ctx.tls));
  return Promise.resolve({
    put: (k, value, i) => (probes[i % probes.length] as Etcd3).put(k).value(value).exec(),
    close: () => {
      for (const p of probes) p.close();
      return Promise.resolve();
    },
  });
}

/**
 * Probes one client may have in flight: one per interval over a probe's deadline (each call
 * listens on the client's close signal until it settles).
 */
const probesInFlightMax = Math.ceil(probeDeadlineMs / probeIntervalMs) + 1;

/** One SDK client over every endpoint (the killed leader's too): its own failover decides. */
async function sdkProber(ctx: WorkloadContext): Promise<Prober> {
  // Node warns past 10 listeners on one AbortSignal; the probes are that many by design. The
  // bench is a process of its own, so raising the default for new signals harms nothing.
  setMaxListeners(probesInFlightMax);
  const client = await connect({
    endpoints: ctx.endpoints,
    ...(ctx.tls === undefined ? {} : { tls: ctx.tls }),
  });
  // One put before the kill, so the client is connected as an application's would be.
  await client.kv.put(key('f', ctx.tag, 9_999_999_999), randomValue());
  return {
    put: (k, value) => client.kv.put(k, value, { timeoutMs: probeDeadlineMs }),
    close: () => client.close(),
  };
}

type MakeProber = (ctx: WorkloadContext, leader: number) => Promise<Prober>;

/** One sample: kill -9 the leader, ms until the first probe put succeeded. */
async function oneFailover(
  ctx: WorkloadContext,
  sample: number,
  makeProber: MakeProber,
): Promise<number> {
  const leader = leaderIndex(await statuses(ctx.endpoints, ctx.tls));
  if (leader === undefined) throw new Error('no agreed leader before the kill');
  const prober = await makeProber(ctx, leader);
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
        prober.put(key('f', ctx.tag, sample * 1e6 + i), value, i).then(
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
    await prober.close();
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
      (s) => oneFailover(ctx, s, etcd3Prober),
      () => ctx.members.waitReady(readyTimeoutMs),
    );
  },
};

export const leaderFailoverSdk: Workload = {
  name: 'leader-failover-sdk',
  title: 'leader kill -9 → first acknowledged put (SDK, all endpoints)',
  opName: 'failover',
  latencyName: 'failover time',
  cpuPerOp: false,
  prepare(ctx) {
    return sampledWorkload(
      'leader failover (SDK)',
      ctx.sizes.sdkFailoverSamples,
      (s) => oneFailover(ctx, s, (c) => sdkProber(c)),
      () => ctx.members.waitReady(readyTimeoutMs),
    );
  },
};
