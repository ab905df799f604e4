// The measured phase of the failover workloads: `count` samples taken one after the other, each a
// time in ms (and optionally figures of its own, summed over the samples into `extra`); a failed
// sample is counted and reported, and `afterFailure` may repair the cluster before the next one.
import type { Measurement, Prepared } from './workload.js';

/** One sample: its time in ms, and figures summed over the samples (e.g. failed requests). */
export interface Sample {
  readonly ms: number;
  readonly extra: Readonly<Record<string, number>>;
}

export function sampledWorkload(
  what: string,
  count: number,
  sample: (s: number) => Promise<number | Sample>,
  afterFailure: () => Promise<unknown> = () => Promise.resolve(),
  extraKeys: readonly string[] = [],
): Promise<Prepared> {
  const measure = async (): Promise<Measurement> => {
    const samplesMs: number[] = [];
    // Every key present from the start: a run whose samples all failed still reports 0.
    const extra: Record<string, number> = Object.fromEntries(extraKeys.map((k) => [k, 0]));
    let errors = 0;
    const started = performance.now();
    for (let s = 0; s < count; s++) {
      try {
        const r = await sample(s);
        if (typeof r === 'number') {
          samplesMs.push(r);
        } else {
          samplesMs.push(r.ms);
          for (const [k, v] of Object.entries(r.extra)) extra[k] = (extra[k] ?? 0) + v;
        }
      } catch (e) {
        errors++;
        process.emitWarning(`${what} sample ${s}: ${String(e)}`);
        await afterFailure();
      }
    }
    return {
      ops: samplesMs.length,
      errors,
      durationMs: performance.now() - started,
      opsPerSec: null,
      latenciesMs: samplesMs,
      ...(Object.keys(extra).length === 0 ? {} : { extra }),
    };
  };
  return Promise.resolve({ measure, cleanup: () => Promise.resolve() });
}
