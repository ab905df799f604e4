// `tenure detect eval`: run every failure detector — tenure's and the calibrated baselines —
// through the same seeded scenarios and report detection time, false `dead`, mistake rate, flaps,
// pause tolerance and load (the QoS metrics of Chen, Toueg & Aguilera, "On the Quality of Service
// of Failure Detectors", 2002, plus membership-level ones). The simulation is pure and
// deterministic (src/detect-eval); this file only spreads the cells over worker threads,
// shows progress on stderr and writes the report.
//
//   tenure detect eval             markdown report on stdout (N = 16 and 128, ~1–2 min on 2 cores)
//   tenure detect eval --json      {"rows":[…],"targets":[…],"meta":{…}} on stdout
//   tenure detect eval --quick     a small smoke run (N = 16, short scenarios)
//   tenure detect eval --out DIR   also write DIR/eval.json, DIR/eval.md, DIR/eval.svg

import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { InvalidArgumentError, type Command } from 'commander';
import { integer, positive } from './args.js';
import { Progress } from '../render/progress.js';
import {
  checkTargets,
  DETECTORS,
  jsonReport,
  markdownReport,
  planCells,
  runCell,
  SCENARIOS,
  sortRows,
  svgPlot,
  type Cell,
  type EvalOptions,
  type EvalReport,
  type EvalRow,
} from '../detect-eval/index.js';

export interface DetectEvalOptions extends EvalOptions {
  /** Worker threads; 1 runs in this thread. */
  readonly jobs: number;
  /** Called after each cell. */
  readonly onProgress?: (
    done: number,
    total: number,
    row: EvalRow,
    elapsedMs: number,
    cellMs: number,
  ) => void;
}

/** Default matrix: the sizes the targets name, every scenario, every detector. */
export const DEFAULT_SIZES = [16, 128] as const;
export const QUICK = { sizes: [16], scale: 0.15 } as const;

interface WorkerTask {
  readonly kind: 'tenure-detect-eval';
}

type WorkerMessage = { readonly row: EvalRow; readonly ms: number } | { readonly error: string };

// A worker thread runs this same module: it simulates each cell it is sent and answers with the row.
if (!isMainThread && (workerData as WorkerTask | null)?.kind === 'tenure-detect-eval') {
  const port = parentPort;
  port?.on('message', (cell: Cell | null) => {
    if (cell === null) {
      port.close();
      return;
    }
    try {
      const t0 = performance.now();
      const row = runCell(cell);
      port.postMessage({ row, ms: performance.now() - t0 } satisfies WorkerMessage);
    } catch (e) {
      const what = `${cell.scenario} n=${cell.n} ${cell.detector} seed ${cell.seed}`;
      const why = e instanceof Error ? (e.stack ?? e.message) : String(e);
      port.postMessage({ error: `${what}: ${why}` } satisfies WorkerMessage);
    }
  });
}

/** Run the evaluation matrix and build the report (checked targets included). */
export async function runDetectEval(o: DetectEvalOptions): Promise<EvalReport> {
  const cells = planCells(o);
  const started = performance.now();
  const rows: EvalRow[] = [];
  const progress = (row: EvalRow, cellMs: number) => {
    rows.push(row);
    o.onProgress?.(rows.length, cells.length, row, performance.now() - started, cellMs);
  };
  const jobs = Math.max(1, Math.min(o.jobs, cells.length));
  if (jobs === 1) {
    for (const c of cells) {
      const t0 = performance.now();
      const row = runCell(c);
      progress(row, performance.now() - t0);
    }
  } else {
    await runPool(cells, jobs, progress);
  }
  const sorted = sortRows(rows);
  return {
    rows: sorted,
    targets: checkTargets(sorted, o.sizes),
    meta: {
      seed: o.seed,
      scale: o.scale,
      sizes: o.sizes,
      detectors: DETECTORS.filter(
        (d) => o.detectors === undefined || o.detectors.includes(d.name),
      ).map((d) => ({ name: d.name, description: d.description })),
      scenarios: SCENARIOS.filter(
        (s) => o.scenarios === undefined || o.scenarios.includes(s.name),
      ).map((s) => ({ name: s.name, description: s.description })),
    },
  };
}

/** Hand the cells (most expensive first) to `jobs` worker threads, the next to whichever is free. */
function runPool(
  cells: readonly Cell[],
  jobs: number,
  onRow: (row: EvalRow, cellMs: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let next = 0;
    let running = jobs;
    const workers: Worker[] = [];
    let failed = false;
    const fail = (e: Error) => {
      if (failed) return;
      failed = true;
      for (const w of workers) void w.terminate();
      reject(e);
    };
    const feed = (w: Worker) => {
      if (next < cells.length) w.postMessage(cells[next++]);
      else w.postMessage(null);
    };
    for (let i = 0; i < jobs; i++) {
      const task: WorkerTask = { kind: 'tenure-detect-eval' };
      const w = new Worker(new URL(import.meta.url), { workerData: task });
      workers.push(w);
      w.on('message', (m: WorkerMessage) => {
        if ('error' in m) {
          fail(new Error(`detect eval worker: ${m.error}`));
          return;
        }
        onRow(m.row, m.ms);
        feed(w);
      });
      w.on('error', fail);
      w.on('exit', (code) => {
        if (failed) return;
        if (code !== 0) fail(new Error(`detect eval worker exited with ${code}`));
        else if (--running === 0) resolve();
      });
      feed(w);
    }
  });
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

interface EvalFlags {
  readonly json?: boolean;
  readonly quick?: boolean;
  readonly out?: string;
  readonly sizes?: string;
  readonly scenarios?: string;
  readonly detectors?: string;
  readonly seed: number;
  readonly jobs?: number;
  readonly scale?: number;
}

export function registerDetect(program: Command): void {
  const detect = program
    .command('detect')
    .description('failure detectors: heartbeat, φ accrual, SWIM + Lifeguard; evaluation harness');
  detect
    .command('eval')
    .description('run every detector through the same seeded scenarios and report the QoS metrics')
    .option('--json', 'print the report as JSON ({"rows":[…]}) instead of markdown')
    .option('--quick', `small smoke run: n = ${QUICK.sizes.join(',')}, scale ${QUICK.scale}`)
    .option('--out <dir>', 'also write eval.json, eval.md and eval.svg into this directory')
    .option('--sizes <list>', `cluster sizes (default ${DEFAULT_SIZES.join(',')})`)
    .option('--scenarios <list>', `subset of: ${SCENARIOS.map((s) => s.name).join(', ')}`)
    .option('--detectors <list>', `subset of: ${DETECTORS.map((d) => d.name).join(', ')}`)
    .option('--seed <n>', 'root seed', integer(0), 1)
    .option('--jobs <n>', 'worker threads (default: CPUs, at most 4)', integer(1))
    .option('--scale <x>', 'multiply scenario lengths and sample counts', positive)
    .action(async (flags: EvalFlags) => {
      const sizes =
        flags.sizes !== undefined
          ? list(flags.sizes).map(Number)
          : flags.quick
            ? [...QUICK.sizes]
            : [...DEFAULT_SIZES];
      if (sizes.some((n) => !Number.isInteger(n) || n < 3 || n > 1024)) {
        throw new InvalidArgumentError('--sizes: integers in [3, 1024]');
      }
      const scenarios = flags.scenarios === undefined ? undefined : list(flags.scenarios);
      const detectors = flags.detectors === undefined ? undefined : list(flags.detectors);
      for (const s of scenarios ?? []) {
        if (!SCENARIOS.some((x) => x.name === s))
          throw new InvalidArgumentError(`unknown scenario ${s}`);
      }
      for (const d of detectors ?? []) {
        if (!DETECTORS.some((x) => x.name === d))
          throw new InvalidArgumentError(`unknown detector ${d}`);
      }
      const jobs = flags.jobs ?? Math.min(4, availableParallelism());
      const scale = flags.scale ?? (flags.quick ? QUICK.scale : 1);
      const started = performance.now();
      const quiet = flags.json === true;
      const progress = new Progress({ name: 'detect eval', total: 1, quiet });
      progress.note(`sizes ${sizes.join(',')}, scale ${scale}, ${jobs} worker(s)`);
      const report = await runDetectEval({
        sizes,
        seed: flags.seed,
        scale,
        jobs,
        ...(scenarios === undefined ? {} : { scenarios }),
        ...(detectors === undefined ? {} : { detectors }),
        onProgress: (done, total, row, _elapsedMs, cellMs) => {
          const cell = `${row.scenario} n=${row.n} ${row.detector}`;
          progress.set(done, `${cell} (${(cellMs / 1000).toFixed(1)}s)`, total);
        },
      });
      progress.finish();
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      if (!quiet)
        process.stderr.write(`tenure detect eval: ${report.rows.length} cells in ${secs}s\n`);
      if (flags.out !== undefined) {
        mkdirSync(flags.out, { recursive: true });
        writeFileSync(join(flags.out, 'eval.json'), jsonReport(report) + '\n');
        writeFileSync(join(flags.out, 'eval.md'), markdownReport(report));
        writeFileSync(join(flags.out, 'eval.svg'), svgPlot(report));
        if (!quiet)
          process.stderr.write(`tenure detect eval: wrote ${flags.out}/eval.{json,md,svg}\n`);
      }
      process.stdout.write(flags.json ? jsonReport(report) + '\n' : markdownReport(report));
    });
}
