// The measured phase of the failover workloads: `count` samples taken one after the other, each a
// time in ms; a failed sample is counted and reported, and `afterFailure` may repair the cluster
// before the next one.
import type { Measurement, Prepared } from './workload.js';

export function sampledWorkload(
  what: string,
  count: number,
  sample: (s: number) => Promise<number>,
  afterFailure: () => Promise<unknown> = () => Promise.resolve(),
): Promise<Prepared> {
  const measure = async (): Promise<Measurement> => {
    const samplesMs: number[] = [];
    let errors = 0;
    const started = performance.now();
    for (let s = 0; s < count; s++) {
      try {
        samplesMs.push(await sample(s));
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
    };
  };
  return Promise.resolve({ measure, cleanup: () => Promise.resolve() });
}
