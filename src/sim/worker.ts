// A worker thread that runs seeds for the `tenure sim` command, so both cores are used.
import { parentPort } from 'node:worker_threads';
import type { MutantName } from '../core/base/mutants.js';
import { runSchedule, type RunResult } from './run.js';
import { generateSchedule } from './schedule.js';

export interface SeedTask {
  readonly id: number;
  readonly seed: number;
  readonly mutants: readonly MutantName[];
  readonly faultPhaseMs?: number;
}

export interface SeedDone {
  readonly id: number;
  readonly result: RunResult;
}

const port = parentPort;
if (port) {
  port.on('message', (t: SeedTask) => {
    const schedule = generateSchedule(
      t.seed,
      t.faultPhaseMs !== undefined ? { faultPhaseMs: t.faultPhaseMs } : {},
    );
    // A run never rejects (failures are results); if it did, the worker's error ends the pool.
    void runSchedule(schedule, { mutants: new Set(t.mutants) }).then((result) => {
      const done: SeedDone = { id: t.id, result };
      port.postMessage(done);
    });
  });
}
