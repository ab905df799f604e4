// `tenure chaos`: real faults on real processes. Relaunches itself in fresh network and PID
// namespaces, starts 3 or 5 members on 127.0.0.1, .2, …, drives workloads while a nemesis
// partitions, pauses and kills them, and judges the histories with src/check; see src/chaos and
// docs/testing.md ("Chaos").
//
// Exit codes: 0 no anomaly, 1 anomalies (each reported), 2 bad usage, 3 the harness could not
// run (not root, no unshare or iptables, members never ready).
import type { Command } from 'commander';
import { integer } from './args.js';

interface ChaosFlags {
  minutes?: string;
  members?: number;
  workloads?: string;
  faults?: string;
  seed?: number;
  json?: boolean;
  out?: string;
  tenure?: string;
}

export function registerChaos(program: Command): void {
  program
    .command('chaos')
    .description('run members in a private namespace under partitions, pauses and kills; check')
    .option('--minutes <n>', 'inject faults for this long (default 5; one cycle at least)')
    .option('--members <n>', '3 or 5 members (default 3)', integer(3))
    .option('--workloads <names>', "comma-separated workloads, or 'all' (default)")
    .option('--faults <names>', "comma-separated fault classes, or 'all' (default)")
    .option('--seed <n>', 'seed of the nemesis and the workloads (default: random)', integer(0))
    .option('--json', 'end stdout with one JSON line {minutes, ops, anomalies, workloads}')
    .option('--out <dir>', 'keep member data, logs and report.json in this directory')
    .option('--tenure <path>', "the members' bin/tenure (another checkout's; default this one)")
    .action(async (flags: ChaosFlags) => {
      const { ChaosError } = await import('../chaos/errors.js');
      const { insideNamespace, relaunchInNamespace } = await import('../chaos/namespace.js');
      try {
        const options = await parseFlags(flags);
        if (!insideNamespace()) {
          process.exitCode = await relaunchInNamespace(process.argv.slice(1));
          return;
        }
        const { runChaos } = await import('../chaos/run.js');
        const json = options.json;
        const { Progress } = await import('../render/progress.js');
        // Chaos's steps are phases of unknown count: notes, kept as lines; none with --json.
        const progress = new Progress({ name: 'chaos', total: 1, quiet: json });
        process.exitCode = await runChaos(options, {
          out: (line) => void (json ? process.stderr : process.stdout).write(`${line}\n`),
          progress: (line) => progress.note(line),
          json: (line) => void process.stdout.write(`${line}\n`),
        });
        progress.finish();
        // Whatever still holds the loop (a gRPC channel's timer) must not keep PID 1 alive.
        process.exit();
      } catch (e) {
        if (e instanceof ChaosError) {
          process.stderr.write(`tenure chaos: ${e.message}\n`);
          process.exit(e.code === 'USAGE' ? 2 : 3);
        }
        throw e;
      }
    });
}

async function parseFlags(flags: ChaosFlags) {
  const { ChaosError } = await import('../chaos/errors.js');
  const { FAULTS, OPTIONS_DEFAULT, WORKLOADS, parseNames } = await import('../chaos/options.js');
  const minutes = flags.minutes === undefined ? OPTIONS_DEFAULT.minutes : Number(flags.minutes);
  if (!Number.isFinite(minutes) || minutes < 0)
    throw new ChaosError('USAGE', `--minutes must be a number ≥ 0, got ${flags.minutes}`);
  const members = flags.members ?? OPTIONS_DEFAULT.members;
  if (members !== 3 && members !== 5)
    throw new ChaosError('USAGE', `--members must be 3 or 5, got ${members}`);
  return {
    minutes,
    members,
    workloads: parseNames('--workloads', flags.workloads, WORKLOADS),
    faults: parseNames('--faults', flags.faults, FAULTS),
    seed: flags.seed ?? Math.floor(Math.random() * 2 ** 31),
    json: flags.json === true,
    ...(flags.out === undefined ? {} : { outDir: flags.out }),
    ...(flags.tenure === undefined ? {} : { tenureBin: flags.tenure }),
  };
}
