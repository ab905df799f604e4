// `tenure demo fence-previous`: the STONITH scenario of src/demo/fence-previous.ts with real
// processes — by default against a throwaway 3-member tenure cluster (demo-run.ts), or against a
// running one (`--endpoints`). Human-readable timeline on stdout; with `--json`, exactly one JSON
// object on stdout and the timeline on stderr. Exit 0 when the new leader started only after the
// frozen one was gone and a failing hook kept it from starting; 1 otherwise; 2 for bad usage.
import type { Command } from 'commander';
import {
  fenceDemoHolds,
  runFencePrevious,
  type FencePreviousReport,
} from '../demo/fence-previous.js';
import { integer } from './args.js';
import { onCluster, runDemo } from './demo-run.js';

interface FencePreviousFlags {
  readonly endpoints?: string;
  readonly json?: boolean;
  readonly ttl: number;
}

function printSummary(r: FencePreviousReport, holds: boolean, out: (l: string) => void): void {
  const f = r.fenced;
  out('');
  out('== Verdict');
  out(
    `fenced:  pid ${f.killed.pid} killed, gone at ${f.killed.goneAtMs} ms; the new leader ` +
      `(token ${f.newLeader.token}) started at ${f.newLeader.startedAtMs} ms; writes by the old ` +
      `pid after the new term: ${f.oldWritesAfterNewTerm}`,
  );
  out(
    `failing: ${r.failing.fenceFailures} × FENCE_FAILED; the new leader started: ` +
      `${r.failing.newLeaderStarted}`,
  );
  out(
    holds
      ? 'OK: the new leader started only once the previous one was gone, and never without that.'
      : 'UNEXPECTED: see the timeline above.',
  );
}

function run(flags: FencePreviousFlags): Promise<number> {
  const headline = 'a new leader fences (kills) the frozen one before it starts';
  return runDemo('fence-previous', flags.json === true, headline, (d) =>
    onCluster(d, flags.endpoints, async (endpoints) => {
      const report = await runFencePrevious({
        endpoints,
        ttlSeconds: flags.ttl,
        timeline: d.t,
        signal: d.signal,
      });
      const holds = fenceDemoHolds(report);
      printSummary(report, holds, d.out);
      if (d.json) process.stdout.write(`${JSON.stringify({ ok: holds, ...report })}\n`);
      return holds ? 0 : 1;
    }),
  );
}

export function registerFencePrevious(demo: Command): void {
  demo
    .command('fence-previous')
    .description(
      'STONITH: a frozen (SIGSTOP) leader is killed by its successor before the successor ' +
        'starts; a hook that cannot fence keeps the successor from starting',
    )
    .option(
      '--endpoints <urls>',
      'use this running cluster (comma-separated client URLs) instead of a throwaway one',
    )
    .option('--json', 'print exactly one JSON object on stdout; the timeline goes to stderr')
    .option('--ttl <seconds>', 'lease TTL of the leaders (the server minimum is 2)', integer(2), 2)
    .action(async (flags: FencePreviousFlags) => {
      process.exit(await run(flags));
    });
}
