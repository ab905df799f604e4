// `tenure sim`: run seeds of the deterministic simulator, or hunt planted bugs with them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { MUTANT_NAMES, type MutantName } from '../core/base/mutants.js';
import { SeedPool } from '../sim/pool.js';
import { formatRegression, makeRegression } from '../sim/regression.js';
import { runSchedule, type RunResult } from '../sim/run.js';
import { describeFault, generateSchedule } from '../sim/schedule.js';
import { shrink } from '../sim/shrink.js';
import { Progress } from '../render/progress.js';

interface SimFlags {
  seeds?: string;
  seed?: string;
  json?: boolean;
  mutants?: string;
  workers?: string;
  shrink: boolean;
  regressions: string;
  trials: string;
  record?: boolean;
}

export function registerSim(program: Command): void {
  program
    .command('sim')
    .description(
      'run the deterministic simulator: the production member through its client API, seeded faults, invariants, and per seed linearizability, the lease contract, lock exclusion and watch delivery',
    )
    .option('--seeds <n>', 'number of seeds to run (with --mutants: at most this many per mutant)')
    .option('--seed <s>', 'first seed, or the one seed to replay when --seeds is not given')
    .option('--mutants <list>', "planted bugs to switch on: 'all' or a comma-separated list")
    .option('--trials <n>', 'with --mutants: independent seed ranges per mutant, for a median', '1')
    .option('--workers <n>', 'worker threads (default: available cores, at most 2)')
    .option('--no-shrink', 'do not shrink a failing seed into a regression script')
    .option('--regressions <dir>', 'where shrunk failures are written', 'test/regressions')
    .option('--record', 'with --seed: shrink a failing seed and write it as a regression script')
    .option('--json', 'print one JSON object on stdout')
    .addHelpText('after', `\nmutants: ${MUTANT_NAMES.join(', ')}`)
    .action(async (flags: SimFlags) => {
      process.exitCode = await runSim(flags);
    });
}

function parseCount(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name} must be a non-negative integer, got '${v}'`);
  return n;
}

function parseMutants(v: string | undefined): MutantName[] {
  if (v === undefined || v === '') return [];
  if (v === 'all') return [...MUTANT_NAMES];
  const names = v.split(',').map((s) => s.trim());
  for (const n of names) {
    if (!(MUTANT_NAMES as string[]).includes(n))
      throw new Error(`unknown mutant '${n}'; known: ${MUTANT_NAMES.join(', ')}`);
  }
  return names as MutantName[];
}

function replayCommand(seed: number, mutants: readonly MutantName[]): string {
  return `bin/tenure sim --seed ${seed}${mutants.length > 0 ? ` --mutants ${mutants.join(',')}` : ''}`;
}

async function runSim(flags: SimFlags): Promise<number> {
  let mutants: MutantName[];
  let first: number;
  let count: number;
  let trials: number;
  try {
    mutants = parseMutants(flags.mutants);
    first = parseCount(flags.seed, 'seed', 1);
    count = parseCount(flags.seeds, 'seeds', flags.seed !== undefined ? 0 : 100);
    trials = Math.max(1, parseCount(flags.trials, 'trials', 1));
  } catch (e) {
    console.error(`tenure sim: ${(e as Error).message}`);
    return 2;
  }
  if (count === 0) return await replayOne(first, mutants, flags);
  const workers = Math.max(
    1,
    parseCount(flags.workers, 'workers', Math.min(2, availableParallelism())),
  );
  const pool = new SeedPool(workers);
  try {
    if (flags.mutants !== undefined) return await hunt(pool, mutants, first, count, trials, flags);
    return await sweep(pool, first, count, flags);
  } finally {
    await pool.close();
  }
}

async function replayOne(seed: number, mutants: MutantName[], flags: SimFlags): Promise<number> {
  const schedule = generateSchedule(seed);
  const started = performance.now();
  const r = await runSchedule(schedule, { mutants: new Set(mutants) });
  const ms = performance.now() - started;
  if (flags.json) {
    console.log(
      JSON.stringify({ ...r, ms: Math.round(ms), faults: schedule.faults.map(describeFault) }),
    );
  } else {
    const c = schedule.config;
    console.log(
      `seed ${seed}: ${c.nodes} nodes, ${c.clients} clients on ${c.keys} keys, ${c.leaseClients} lease holders, ${c.lockClients} lock and ${c.electionClients} election clients, ${c.watchers} watchers; election ${c.electionTicks} ticks, loss ${(c.links.lossProbability * 100).toFixed(1)}%, clocks ${c.driftClass}`,
    );
    for (const f of schedule.faults) console.log(`  ${describeFault(f)}`);
    console.log(
      `${r.ok ? 'ok' : `FAILED ${r.invariant}`}: ${r.events} events, ${r.opsChecked} ops checked, ${r.renewalsChecked} renewals, ${r.holdsChecked} holds and ${r.answersChecked} answers judged, ${r.virtualMs} ms virtual, ${ms.toFixed(0)} ms real, event hash ${r.eventHash.toString(16)}`,
    );
    if (!r.ok) console.log(r.message);
  }
  if (!r.ok && flags.record)
    console.log(`regression script: ${await shrinkToFile(r, mutants, flags.regressions)}`);
  return r.ok ? 0 : 1;
}

async function sweep(
  pool: SeedPool,
  first: number,
  count: number,
  flags: SimFlags,
): Promise<number> {
  const started = performance.now();
  const progress = new Progress({ name: 'sim', total: count, quiet: flags.json === true });
  let done = 0;
  let ops = 0;
  let renewals = 0;
  let holds = 0;
  let answers = 0;
  const failures: RunResult[] = [];
  const tasks: Promise<void>[] = [];
  for (let s = first; s < first + count; s++) {
    tasks.push(
      pool.run(s, []).then((r) => {
        done++;
        ops += r.opsChecked;
        renewals += r.renewalsChecked;
        holds += r.holdsChecked;
        answers += r.answersChecked;
        if (!r.ok) {
          failures.push(r);
          const line = `seed ${r.seed} FAILED ${r.invariant}: ${r.message}\n  replay: ${replayCommand(r.seed, [])}`;
          // Failures are said even with --json (which holds them too), above any bar.
          if (flags.json === true) process.stderr.write(`${line}\n`);
          else progress.note(line);
        }
        const rate = done / ((performance.now() - started) / 1000);
        progress.set(done, `failed ${failures.length}, ${rate.toFixed(1)} seeds/s`);
      }),
    );
  }
  await Promise.all(tasks);
  progress.finish();
  const seconds = (performance.now() - started) / 1000;
  failures.sort((a, b) => a.seed - b.seed);
  const firstFailure = failures[0];
  let regression: string | undefined;
  if (firstFailure && flags.shrink)
    regression = await shrinkToFile(firstFailure, [], flags.regressions);
  const summary = {
    seeds: count,
    failed: failures.length,
    opsChecked: ops,
    renewalsChecked: renewals,
    holdsChecked: holds,
    answersChecked: answers,
    seedsPerSecond: Number((count / seconds).toFixed(2)),
    failures: failures.map((f) => ({
      seed: f.seed,
      invariant: f.invariant,
      message: f.message,
      replay: replayCommand(f.seed, []),
    })),
    ...(regression ? { regression } : {}),
  };
  if (flags.json) console.log(JSON.stringify(summary));
  else {
    console.log(
      `${count} seeds, ${failures.length} failed, ${ops} operations checked for linearizability, ${renewals} lease renewals and ${holds} lock and election holds judged, ${summary.seedsPerSecond} seeds/s`,
    );
    if (regression) console.log(`shrunk regression script: ${regression}`);
  }
  return failures.length > 0 ? 1 : 0;
}

interface Catch {
  readonly name: MutantName;
  readonly caught: boolean;
  readonly seedsToCatch: number | null;
  readonly invariant: string | null;
  readonly seed: number | null;
  readonly trials: (number | null)[];
  readonly medianSeedsToCatch: number | null;
}

/** Find, for each mutant, the first seed (from `first`) at which some check fails. */
async function hunt(
  pool: SeedPool,
  mutants: MutantName[],
  first: number,
  max: number,
  trials: number,
  flags: SimFlags,
): Promise<number> {
  const started = performance.now();
  const progress = new Progress({
    name: 'mutants',
    total: mutants.length * trials,
    quiet: flags.json === true,
  });
  const results: Catch[] = [];
  for (const name of mutants) {
    const perTrial: { seed: number; r: RunResult }[] = [];
    const seedsToCatch: (number | null)[] = [];
    for (let t = 0; t < trials; t++) {
      const base = first + t * 1_000_000;
      const found = await firstCatch(pool, name, base, max);
      seedsToCatch.push(found ? found.seed - base + 1 : null);
      if (found) perTrial.push(found);
      progress.note(
        `${name}${trials > 1 ? ` trial ${t + 1}/${trials}` : ''}: ${found ? `caught after ${found.seed - base + 1} seeds by ${found.r.invariant}` : `not caught in ${max} seeds`}`,
      );
      progress.set(results.length * trials + t + 1, name);
    }
    const firstFound = perTrial[0];
    const caughtCounts = seedsToCatch.filter((x): x is number => x !== null).sort((a, b) => a - b);
    results.push({
      name,
      caught: seedsToCatch[0] !== null,
      seedsToCatch: seedsToCatch[0] ?? null,
      invariant: firstFound?.r.invariant ?? null,
      seed: firstFound?.seed ?? null,
      trials: seedsToCatch,
      medianSeedsToCatch: caughtCounts.length === trials ? (median(caughtCounts) ?? null) : null,
    });
  }
  progress.finish();
  const seconds = (performance.now() - started) / 1000;
  if (flags.json) {
    console.log(JSON.stringify({ mutants: results, seconds: Number(seconds.toFixed(1)) }));
  } else {
    for (const r of results) {
      console.log(
        `${r.name.padEnd(28)} ${r.caught ? `caught after ${r.seedsToCatch} seeds by ${r.invariant} (replay: ${replayCommand(r.seed as number, [r.name])})` : 'NOT CAUGHT'}${trials > 1 ? `  trials: ${r.trials.map((x) => x ?? '-').join(' ')}; median ${r.medianSeedsToCatch ?? '-'}` : ''}`,
      );
    }
  }
  return results.every((r) => r.trials.every((x) => x !== null)) ? 0 : 1;
}

async function firstCatch(
  pool: SeedPool,
  name: MutantName,
  base: number,
  max: number,
): Promise<{ seed: number; r: RunResult } | undefined> {
  // Issue seeds in order, a window at a time; stop issuing once one fails, then take the lowest.
  const window = 8;
  let next = base;
  let best: { seed: number; r: RunResult } | undefined;
  const inflight = new Set<Promise<void>>();
  while ((next < base + max && !best) || inflight.size > 0) {
    while (inflight.size < window && next < base + max && !best) {
      const seed = next++;
      const p: Promise<void> = pool.run(seed, [name]).then((r) => {
        inflight.delete(p);
        if (!r.ok && (!best || seed < best.seed)) best = { seed, r };
      });
      inflight.add(p);
    }
    if (inflight.size > 0) await Promise.race(inflight);
  }
  return best;
}

function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const m = Math.floor(xs.length / 2);
  return xs.length % 2 === 1 ? xs[m] : ((xs[m - 1] as number) + (xs[m] as number)) / 2;
}

async function shrinkToFile(
  failure: RunResult,
  mutants: MutantName[],
  dir: string,
): Promise<string> {
  const schedule = generateSchedule(failure.seed);
  process.stderr.write(`shrinking seed ${failure.seed} (${schedule.faults.length} faults)…\n`);
  const s = await shrink(schedule, failure, new Set(mutants), (runs, faults) => {
    if (runs % 20 === 0) process.stderr.write(`  shrink: ${runs} replays, ${faults} faults left\n`);
  });
  mkdirSync(dir, { recursive: true });
  const name = `seed-${failure.seed}-${failure.invariant}${mutants.length > 0 ? `-${mutants.join('-')}` : ''}`;
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    formatRegression(
      makeRegression(
        name,
        s.schedule,
        failure.invariant ?? 'liveness',
        s.result.message ?? '',
        mutants,
      ),
    ),
  );
  process.stderr.write(
    `  shrunk to ${s.schedule.faults.length} faults in ${s.runs} replays: ${file}\n`,
  );
  return file;
}

export { shrinkToFile };
