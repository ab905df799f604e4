// Background writers for the disruption workloads (leader-pause, rolling-restart): `gapWriters`
// sequential put loops through one SDK client over every endpoint, with the client's normal
// failover (connect() defaults; each put bounded by `gapPutTimeoutMs`). What the application sees
// is the longest stretch without an acknowledged write, and how many requests failed.
import { connect, type Client } from '../../client/index.js';
import { gapPutTimeoutMs, gapWriters, probeIntervalMs } from '../config.js';
import { key, randomValue } from './keys.js';
import type { WorkloadContext } from './workload.js';

export interface GapWriters {
  /** Stop the writers, wait for their last puts, close the client; the figures. */
  stop(): Promise<WriteGaps>;
}

export interface WriteGaps {
  /** Longest interval between two consecutive acknowledged writes (of any writer), ms. */
  readonly longestGapMs: number;
  readonly acked: number;
  /** Puts that failed (rejected or timed out) as the client reported them. */
  readonly failed: number;
}

/** The longest gap between consecutive times of `sortedMs` (ascending); 0 for fewer than 2. */
export function longestGap(sortedMs: readonly number[]): number {
  let longest = 0;
  for (let i = 1; i < sortedMs.length; i++) {
    longest = Math.max(longest, (sortedMs[i] as number) - (sortedMs[i - 1] as number));
  }
  return longest;
}

export async function startGapWriters(ctx: WorkloadContext, prefix: string): Promise<GapWriters> {
  const client: Client = await connect({
    endpoints: ctx.endpoints,
    ...(ctx.tls === undefined ? {} : { tls: ctx.tls }),
  });
  const stop = new AbortController();
  const ackedAt: number[] = [];
  let failed = 0;
  let n = 0;
  const value = randomValue();
  const worker = async (w: number): Promise<void> => {
    while (!stop.signal.aborted) {
      try {
        await client.kv.put(key(prefix, ctx.tag, w * 1e8 + n++), value, {
          timeoutMs: gapPutTimeoutMs,
          signal: stop.signal,
        });
        ackedAt.push(performance.now());
      } catch {
        if (stop.signal.aborted) break;
        failed++;
        // A failed put is retried at the probe cadence, not in a tight loop.
        await new Promise((r) => setTimeout(r, probeIntervalMs));
      }
    }
  };
  const running = Promise.all(Array.from({ length: gapWriters }, (_, w) => worker(w)));
  return {
    async stop() {
      // The gap is measured up to the last acknowledged write before the stop.
      const stoppedAt = performance.now();
      stop.abort(new Error('stopped'));
      await running;
      await client.close();
      ackedAt.sort((a, b) => a - b);
      const last = ackedAt[ackedAt.length - 1];
      // No write acknowledged after the disruption counts as a gap up to the stop.
      const tail = last === undefined ? 0 : stoppedAt - last;
      return { longestGapMs: Math.max(longestGap(ackedAt), tail), acked: ackedAt.length, failed };
    },
  };
}
