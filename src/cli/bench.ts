// `tenure bench`: tenure (and with --vs etcd, Debian's etcd 3.4) as 3-member clusters on
// 127.0.0.1, driven by the same clients through the same workloads; see src/bench/run.ts. With
// --vs postgres, a throwaway PostgreSQL server runs the workloads tenure/pg supports. With --tls
// both systems' members serve https:// client and peer URLs with client certificates required,
// from a throwaway CA made for the run (cluster-tls.ts), and every client presents one.
//
// Exit codes: 0 done (workload failures are reported in the results), 1 the bench itself failed,
// 2 bad usage or a missing etcd.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { clusterTls } from './cluster-tls.js';
import { integer } from './args.js';
import { BenchSetupError, BenchUsageError } from '../bench/errors.js';

interface BenchFlags {
  vs?: string;
  json?: boolean;
  out?: string;
  rounds?: number;
  quick?: boolean;
  workloads?: string;
  tls?: boolean;
  etcdTiming?: string;
}

/** `--etcd-timing` values (run.ts etcdTimings; not imported, so the bench loads lazily). */
const etcdTimingValues = ['default', '50/500'] as const;
type EtcdTimingValue = (typeof etcdTimingValues)[number];
const isEtcdTiming = (v: string): v is EtcdTimingValue =>
  (etcdTimingValues as readonly string[]).includes(v);

/**
 * Extra `node` arguments for the tenure members only, space-separated (e.g. `--cpu-prof
 * --cpu-prof-dir=DIR`; Node 20 refuses --cpu-prof in NODE_OPTIONS).
 */
const memberNodeArgsEnv = 'TENURE_BENCH_MEMBER_NODE_ARGS';

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('benchmark a local 3-member tenure cluster, optionally against etcd 3.4')
    .option(
      '--vs <systems>',
      "also run these systems, comma-separated: 'etcd' (with ratios), 'postgres' (tenure/pg; " +
        'lock-handoff only)',
    )
    .option(
      '--etcd-timing <timings>',
      "with --vs etcd: etcd's Raft timing, comma-separated, each a system of its own: 'default' " +
        "(100 ms heartbeat / 1000 ms election timeout, system 'etcd'), '50/500' (system " +
        "'etcd-50/500'); default: default",
    )
    .option('--json', 'print only the JSON result on stdout')
    .option('--out <dir>', 'write result.json, report.md and SVG charts to this directory')
    .option(
      '--rounds <n>',
      'rounds, each running every system once (default 3; 1 with --quick)',
      integer(1),
    )
    .option('--quick', 'tiny workloads, one round (CI smoke test)')
    .option(
      '--workloads <names>',
      'comma-separated workload names to run (default: all but the disruption ones); ' +
        "'leader-pause' names the four pause durations, 'disruption' leader-failover-sdk, " +
        'leader-pause, rolling-restart and lock-failover',
    )
    .option(
      '--tls',
      'both systems on https:// client and peer URLs, client certificates required (throwaway CA)',
    )
    .addHelpText(
      'after',
      `\nSet ${memberNodeArgsEnv} to pass node arguments to the tenure members only, e.g.\n` +
        `  ${memberNodeArgsEnv}="--cpu-prof --cpu-prof-dir=/tmp/prof" tenure bench --workloads put-throughput`,
    )
    .action(async (flags: BenchFlags) => {
      const vs = flags.vs === undefined ? [] : flags.vs.split(',');
      const unknown = vs.filter((v) => v !== 'etcd' && v !== 'postgres');
      if (unknown.length > 0) {
        process.stderr.write(
          `tenure bench: --vs supports etcd and postgres, got ${unknown.join(',')}\n`,
        );
        process.exit(2);
      }
      const timings = flags.etcdTiming?.split(',') ?? ['default'];
      const badTimings = timings.filter((t) => !isEtcdTiming(t));
      if (badTimings.length > 0 || (flags.etcdTiming !== undefined && !vs.includes('etcd'))) {
        process.stderr.write(
          `tenure bench: --etcd-timing takes default and 50/500 with --vs etcd, got ` +
            `${flags.etcdTiming ?? ''}\n`,
        );
        process.exit(2);
      }
      const memberNodeArgs = process.env[memberNodeArgsEnv]?.split(/\s+/).filter((a) => a !== '');
      // Loaded here, not at the top: `tenure start` must not pay for the bench and its client.
      const { renderTable, runBench } = await import('../bench/run.js');
      // One throwaway CA and certificate set (as `tenure up --tls`) for every cluster of the run,
      // removed with it.
      const tlsDir = flags.tls === true ? mkdtempSync(join(tmpdir(), 'tenure-bench-tls-')) : '';
      const removeTls = (): void => {
        if (tlsDir !== '') rmSync(tlsDir, { recursive: true, force: true });
      };
      try {
        const tls = tlsDir === '' ? undefined : await clusterTls(tlsDir, 3, true);
        const result = await runBench({
          vsEtcd: vs.includes('etcd'),
          etcdTimings: timings.filter(isEtcdTiming),
          vsPostgres: vs.includes('postgres'),
          quick: flags.quick === true,
          json: flags.json === true,
          ...(tls === undefined ? {} : { tls }),
          ...(flags.rounds === undefined ? {} : { rounds: flags.rounds }),
          ...(flags.out === undefined ? {} : { outDir: flags.out }),
          ...(flags.workloads === undefined ? {} : { workloads: flags.workloads.split(',') }),
          ...(memberNodeArgs === undefined ? {} : { memberNodeArgs }),
          command: ['tenure', ...process.argv.slice(2)].join(' '),
        });
        if (flags.json === true) {
          process.stdout.write(`${JSON.stringify(result)}\n`);
          process.stderr.write(`${renderTable(result)}\n`);
        } else {
          process.stdout.write(`${renderTable(result)}\n`);
          if (flags.out !== undefined) process.stdout.write(`\nwritten to ${flags.out}\n`);
        }
      } catch (e) {
        if (e instanceof BenchSetupError || e instanceof BenchUsageError) {
          process.stderr.write(`tenure bench: ${e.message}\n`);
          removeTls(); // process.exit skips the finally below
          process.exit(2);
        }
        throw e;
      } finally {
        removeTls();
      }
    });
}
