// Watch fan-out: 100 watchers on one key, spread over up to 10 etcd3 clients (each multiplexes
// its watchers on one Watch stream, as etcd3 does), and one writer putting sequentially through
// a random endpoint. Each value carries the put's start time; delivery latency = put start →
// event received. events/s = events delivered / (first put start → last event received).
import type { Etcd3, Watcher } from 'etcd3';
import { watchClientsMax, watchDrainMs } from '../config.js';
import { poolClient } from '../etcd3-clients.js';
import { key, valueBytes } from './keys.js';
import type { Measurement, Workload } from './workload.js';

/** A 64-byte value whose first bytes are the put's start time (performance.now(), in ms). */
function stampedValue(startedMs: number): Buffer {
  const b = Buffer.alloc(valueBytes);
  b.writeDoubleLE(startedMs, 0);
  return b;
}

export const watchFanout: Workload = {
  name: 'watch-fanout',
  title: 'watch fan-out, 1 writer',
  opName: 'event',
  latencyName: 'delivery latency',
  cpuPerOp: true,
  async prepare(ctx) {
    const { watchers: watcherCount, watchPuts } = ctx.sizes;
    const k = key('w', ctx.tag, 0);
    const clientCount = Math.min(watchClientsMax, watcherCount);
    const clients: Etcd3[] = Array.from({ length: clientCount }, () =>
      poolClient(ctx.endpoints, ctx.tls),
    );
    const writer = poolClient(ctx.endpoints, ctx.tls);
    const latenciesMs: number[] = [];
    let lastEventAt = 0;
    let counting = false;
    const watchers: Watcher[] = [];
    for (let w = 0; w < watcherCount; w++) {
      const watcher = await (clients[w % clientCount] as Etcd3).watch().key(k).create();
      watcher.on('put', (kv) => {
        if (!counting) return;
        const now = performance.now();
        latenciesMs.push(now - kv.value.readDoubleLE(0));
        lastEventAt = now;
      });
      watchers.push(watcher);
    }
    // Warm-up: a few puts whose events are not counted.
    for (let i = 0; i < Math.min(10, ctx.sizes.warmupOps); i++) {
      await writer.put(k).value(stampedValue(performance.now())).exec();
    }
    await new Promise((r) => setTimeout(r, 200));

    const measure = async (): Promise<Measurement> => {
      counting = true;
      const expected = watchPuts * watcherCount;
      const started = performance.now();
      let errors = 0;
      for (let i = 0; i < watchPuts; i++) {
        try {
          await writer.put(k).value(stampedValue(performance.now())).exec();
        } catch {
          errors++;
        }
      }
      const drainUntil = performance.now() + watchDrainMs;
      const wanted = expected - errors * watcherCount;
      while (latenciesMs.length < wanted && performance.now() < drainUntil) {
        await new Promise((r) => setTimeout(r, 5));
      }
      counting = false;
      const delivered = latenciesMs.length;
      const durationMs = (delivered > 0 ? lastEventAt : performance.now()) - started;
      return {
        ops: delivered,
        errors,
        durationMs,
        opsPerSec: delivered / (durationMs / 1000),
        latenciesMs: [...latenciesMs],
        extra: {
          expected: wanted,
          missed: Math.max(0, wanted - delivered),
          watchers: watcherCount,
        },
      };
    };
    return {
      measure,
      cleanup: async () => {
        await Promise.allSettled(watchers.map((w) => w.cancel()));
        for (const c of clients) c.close();
        writer.close();
      },
    };
  },
};
