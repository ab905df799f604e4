// A closed-loop load generator: `concurrency` workers, each issuing the next operation as soon as
// its previous one settled, until `count` operations were started or `timeCapMs` passed.
// Latency = call start → promise settled, for successful calls only.
import type { Measurement } from './workload.js';

export interface ClosedLoopOptions {
  readonly concurrency: number;
  readonly count: number;
  readonly timeCapMs: number;
  /** Operation number i (0-based). */
  readonly op: (i: number) => Promise<unknown>;
}

export async function closedLoop(options: ClosedLoopOptions): Promise<Measurement> {
  const latenciesMs: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const deadline = started + options.timeCapMs;
  const worker = async (): Promise<void> => {
    while (next < options.count && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      try {
        await options.op(i);
        latenciesMs.push(performance.now() - t0);
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const durationMs = performance.now() - started;
  if (latenciesMs.length === 0 && firstError !== undefined) {
    throw new Error(`every operation failed; the first: ${firstError}`);
  }
  return {
    ops: latenciesMs.length,
    errors,
    durationMs,
    opsPerSec: latenciesMs.length / (durationMs / 1000),
    latenciesMs,
  };
}

/** Run `count` operations `concurrency` at a time, unmeasured (set-up and warm-up). */
export async function runAll(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
