// `tenure check`: the linearizability checker from the command line — check a recorded history,
// re-run Porcupine's published kv histories, cross-check against the brute-force oracle, and
// benchmark on a large generated history.
//
// Exit codes: 0 linearizable (or every verdict as expected), 1 not linearizable (or a verdict
// differs from the expected one), 2 bad usage or unreadable input, 3 unknown (budget ran out).

import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { integer, probability } from './args.js';
import {
  checkKv,
  checkPorcupineKv,
  crossCheck,
  defaultPorcupineDir,
  loadPorcupineKvCorpus,
  parseKvJsonl,
  runBench,
  type Verdict,
} from '../check/index.js';

const EXIT_ILLEGAL = 1;
const EXIT_USAGE = 2;
const EXIT_UNKNOWN = 3;

const ms = (t: number): string => `${t.toFixed(1)} ms`;

function exitCodeFor(verdict: Verdict): number {
  return verdict === 'ok' ? 0 : verdict === 'illegal' ? EXIT_ILLEGAL : EXIT_UNKNOWN;
}

export function registerCheck(program: Command): void {
  const check = program
    .command('check')
    .description('linearizability checker: check histories, validate against corpora, benchmark');

  check
    .command('file')
    .description('check a history file: one KvOperation JSON per line (return: null = unknown)')
    .argument('<history.jsonl>', 'the history to check')
    .option('--timeout-ms <ms>', 'time budget; past it the verdict is unknown', integer(0))
    .option('--absent-empty', 'an absent key reads as "" (Porcupine convention) instead of null')
    .option('--json', 'print the result as JSON')
    .action((path: string, opts: { timeoutMs?: number; absentEmpty?: boolean; json?: boolean }) => {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (cause) {
        console.error(`tenure check file: cannot read ${path}: ${String(cause)}`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      let history;
      try {
        history = parseKvJsonl(text);
      } catch (cause) {
        console.error(`tenure check file: ${path}: ${String(cause)}`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      const started = performance.now();
      const result = checkKv(history, {
        timeoutMs: opts.timeoutMs,
        absentValue: opts.absentEmpty === true ? '' : null,
      });
      const elapsedMs = performance.now() - started;
      if (opts.json === true) {
        console.log(JSON.stringify({ path, ops: history.length, ...result, elapsedMs }));
      } else {
        console.log(
          `${path}: ${result.verdict} (${history.length} ops, ${result.partitions} partitions, ${ms(elapsedMs)})`,
        );
        if (result.detail !== undefined) console.log(result.detail);
      }
      process.exitCode = exitCodeFor(result.verdict);
    });

  check
    .command('porcupine')
    .description("check Porcupine's six kv histories against their published verdicts")
    .option('--dir <path>', 'the corpus folder (default: testdata/porcupine in the repo)')
    .option('--timeout-ms <ms>', 'time budget per history', integer(0))
    .option('--json', 'print one JSON object per history')
    .action((opts: { dir?: string; timeoutMs?: number; json?: boolean }) => {
      let corpus;
      try {
        corpus = loadPorcupineKvCorpus(opts.dir ?? defaultPorcupineDir());
      } catch (cause) {
        console.error(`tenure check porcupine: ${String(cause)}`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      let wrong = 0;
      for (const c of corpus) {
        const started = performance.now();
        const result = checkPorcupineKv(c.history, { timeoutMs: opts.timeoutMs });
        const elapsedMs = performance.now() - started;
        const expected: Verdict = c.linearizable ? 'ok' : 'illegal';
        const agrees = result.verdict === expected;
        if (!agrees) wrong++;
        if (opts.json === true) {
          console.log(
            JSON.stringify({ file: c.name, ops: c.history.length, expected, ...result, elapsedMs }),
          );
        } else {
          console.log(
            `${c.name.padEnd(16)} ${String(c.history.length).padStart(5)} ops  ` +
              `expected ${expected.padEnd(7)} got ${result.verdict.padEnd(7)} ` +
              `${ms(elapsedMs).padStart(10)}  ${agrees ? 'agrees' : 'DISAGREES'}`,
          );
        }
      }
      if (wrong > 0) process.exitCode = EXIT_ILLEGAL;
    });

  check
    .command('crosscheck')
    .description('compare the checker with the brute-force oracle on random small histories')
    .option('--count <n>', 'how many histories', integer(1), 100_000)
    .option('--seed <s>', 'root seed', integer(0), 1)
    .option('--unknown-writes <p>', "probability that a write's outcome is unknown", probability)
    .option('--distinct-values', 'every write writes a value of its own, as a workload does')
    .option('--no-prune', 'check without first pruning unknown-outcome writes')
    .option('--json', 'print the report as JSON')
    .action(
      (opts: {
        count: number;
        seed: number;
        unknownWrites?: number;
        distinctValues?: boolean;
        prune: boolean;
        json?: boolean;
      }) => {
        const report = crossCheck({
          count: opts.count,
          seed: opts.seed,
          history: { unknownWrites: opts.unknownWrites, distinctValues: opts.distinctValues },
          check: (history, absentValue) =>
            checkKv(history, { absentValue, pruneUnknownWrites: opts.prune }).verdict,
        });
        if (opts.json === true) {
          console.log(JSON.stringify(report, (_k, v: unknown) => (v === Infinity ? null : v)));
        } else {
          console.log(
            `${report.count} histories (oracle: ${report.ok} ok, ${report.illegal} illegal), ` +
              `${report.disagreements} disagreements, ${ms(report.elapsedMs)}`,
          );
          for (const d of report.examples) {
            console.log(`  seed ${d.seed}: oracle ${d.expected}, checker ${d.actual}`);
          }
        }
        if (report.disagreements > 0) process.exitCode = EXIT_ILLEGAL;
      },
    );

  check
    .command('bench')
    .description('time the checker on a generated linearizable history')
    .option('--ops <n>', 'operations', integer(1), 10_000)
    .option('--keys <k>', 'distinct keys', integer(1), 16)
    .option('--clients <c>', 'concurrent clients', integer(1), 8)
    .option('--seed <s>', 'seed', integer(0), 1)
    .option('--unknown-rate <p>', 'probability of an unknown outcome', probability, 0.002)
    .option(
      '--unknown-writes <p>',
      "probability that a write's outcome is unknown (on top of --unknown-rate)",
      probability,
      0,
    )
    .option('--no-prune', 'check without first pruning unknown-outcome writes (for comparison)')
    .option('--timeout-ms <ms>', 'time budget; past it the verdict is unknown', integer(0), 60_000)
    .option('--json', 'print the report as JSON')
    .action(
      (opts: {
        ops: number;
        keys: number;
        clients: number;
        seed: number;
        unknownRate: number;
        unknownWrites: number;
        prune: boolean;
        timeoutMs: number;
        json?: boolean;
      }) => {
        const report = runBench({ ...opts, pruneUnknownWrites: opts.prune });
        if (opts.json === true) {
          console.log(JSON.stringify(report));
        } else {
          console.log(
            `${report.ops} ops, ${report.keys} keys, ${report.clients} clients, seed ${report.seed}, ` +
              `${report.unknownOps} unknown outcomes: ${report.verdict} in ${ms(report.checkMs)} ` +
              `(${report.partitions} partitions; generating took ${ms(report.generateMs)})`,
          );
          const p = report.pruned;
          if (p !== undefined && report.unknownOps > 0) {
            console.log(
              `unknown-outcome writes: ${p.dropped} dropped, ${p.opaque} made opaque, ` +
                `${p.bounded} bounded by their first observer, ${p.expiring} unknown CASes expiring`,
            );
          }
        }
        process.exitCode = exitCodeFor(report.verdict);
      },
    );
}
