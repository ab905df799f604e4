// `tenure demo split-brain`: the zombie-writer scenario of split-brain.ts with real processes —
// by default against a throwaway 3-member tenure cluster on free 127.0.0.1 ports in a temporary
// directory (stopped by PID and removed at the end), or against a running one (`--endpoints`).
// Human-readable timeline on stdout; with `--json`, exactly one JSON object on stdout and the
// timeline on stderr. Exit 0 when the fenced store accepted no stale write (and refused some)
// and the unfenced one accepted some; 1 otherwise; 2 for bad usage.
import { InvalidArgumentError, type Command } from 'commander';
import {
  demoHolds,
  reportJson,
  runSplitBrain,
  type SplitBrainReport,
} from '../demo/split-brain.js';
import { registerFencePrevious } from './demo-fence-previous.js';
import { integer } from './args.js';
import { onCluster, runDemo } from './demo-run.js';
import { registerRedlockDemo } from './demo-redlock.js';

interface SplitBrainFlags {
  readonly endpoints?: string;
  readonly json?: boolean;
  readonly ttl: number;
  readonly parts: number;
  readonly store: string;
  readonly pgUrl?: string;
}

function parseStore(text: string): 'files' | 'postgres' {
  if (text !== 'files' && text !== 'postgres') {
    throw new InvalidArgumentError(`expected files or postgres, got ${JSON.stringify(text)}`);
  }
  return text;
}

function printSummary(r: SplitBrainReport, holds: boolean, out: (line: string) => void): void {
  out('');
  out('== Verdict');
  out(
    `fenced:   ${r.fenced.staleWritesAccepted} stale writes accepted, ` +
      `${r.fenced.staleWritesRejected} rejected; final record from one writer: ${!r.fenced.finalRecordMixed}`,
  );
  out(
    `unfenced: ${r.unfenced.staleWritesAccepted} stale writes accepted, ` +
      `${r.unfenced.staleWritesRejected} rejected; final record mixed: ${r.unfenced.finalRecordMixed}`,
  );
  const seen = r.fenced.observedOnResume;
  if (seen !== undefined) {
    out(
      `On resume worker-1's own SDK already knew (grant.signal.aborted=${seen.signalAborted}, ` +
        `session.valid()=${seen.sessionValid}): a worker that checks before each write stops ` +
        'itself. One that does not — or is paused between its check and its write — is stopped ' +
        'only by the fence at the store.',
    );
  }
  out(
    holds
      ? 'OK: the fence refused every stale write; without it the zombie corrupted the record.'
      : 'UNEXPECTED: the runs did not show the fenced/unfenced difference (see above).',
  );
}

export function registerDemo(program: Command): void {
  const demo = program
    .command('demo')
    .description('demonstrations with real processes against a tenure cluster');
  registerRedlockDemo(demo);
  demo
    .command('split-brain')
    .description(
      'a lock holder frozen (SIGSTOP) past its lease writes after its successor: refused by a ' +
        'fenced store, accepted by an unfenced one',
    )
    .option(
      '--endpoints <urls>',
      'use this running cluster (comma-separated client URLs) instead of a throwaway one',
    )
    .option('--json', 'print exactly one JSON object on stdout; the timeline goes to stderr')
    .option('--ttl <seconds>', 'lease TTL of the workers (the server minimum is 2)', integer(2), 2)
    .option('--parts <n>', 'parts of the record each worker writes (2..16)', integer(2), 3)
    .option('--store <kind>', 'files (a temporary directory) or postgres', parseStore, 'files')
    .option('--pg-url <url>', 'PostgreSQL connection string for --store postgres')
    .action(async (flags: SplitBrainFlags) => {
      const backend = parseStore(flags.store);
      if (backend === 'postgres' && flags.pgUrl === undefined) {
        process.stderr.write('tenure demo split-brain: --store postgres needs --pg-url\n');
        process.exit(2);
      }
      const headline = 'a lock holder frozen past its lease, and who stops its writes';
      const code = await runDemo('split-brain', flags.json === true, headline, (d) =>
        onCluster(d, flags.endpoints, async (endpoints) => {
          const report = await runSplitBrain({
            endpoints,
            backend,
            ...(flags.pgUrl === undefined ? {} : { pgUrl: flags.pgUrl }),
            ttlSeconds: flags.ttl,
            parts: flags.parts,
            timeline: d.t,
            signal: d.signal,
          });
          const holds = demoHolds(report);
          printSummary(report, holds, d.out);
          if (d.json) process.stdout.write(`${JSON.stringify(reportJson(report))}\n`);
          return holds ? 0 : 1;
        }),
      );
      process.exit(code);
    });
  registerFencePrevious(demo);
}
