// A small pool of worker threads running seeds; results come back in completion order.
import { Worker } from 'node:worker_threads';
import type { SeedDone, SeedTask } from './worker.js';
import type { RunResult } from './run.js';

export class SeedPool {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly waiting = new Map<number, (r: RunResult) => void>();
  private readonly queue: SeedTask[] = [];
  private nextId = 1;

  constructor(size: number) {
    const url = new URL('./worker.js', import.meta.url);
    for (let i = 0; i < size; i++) {
      const w = new Worker(url);
      w.on('message', (m: SeedDone) => {
        const done = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        this.idle.push(w);
        this.pump();
        done?.(m.result);
      });
      // A worker that throws is a bug in the simulator itself: let it end the command loudly.
      w.on('error', (e) => {
        throw e;
      });
      this.workers.push(w);
      this.idle.push(w);
    }
  }

  run(seed: number, mutants: SeedTask['mutants'], faultPhaseMs?: number): Promise<RunResult> {
    return new Promise((resolve) => {
      const id = this.nextId++;
      this.waiting.set(id, resolve);
      this.queue.push({
        id,
        seed,
        mutants,
        ...(faultPhaseMs !== undefined ? { faultPhaseMs } : {}),
      });
      this.pump();
    });
  }

  private pump(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const w = this.idle.pop() as Worker;
      w.postMessage(this.queue.shift());
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
