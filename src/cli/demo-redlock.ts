// `tenure demo redlock`: Redlock (@sesamecare-oss/redlock over five real redis-server processes)
// through a paused holder, a node's wall clock jump and a node restart without fsync, then tenure's
// Lock and a fence through the same faults. Timeline on stdout; with `--json`, exactly one JSON
// object on stdout (the counts per scenario per system) and the timeline on stderr. Exit 0 when
// every Redlock scenario failed and tenure showed no overlap and refused the stale write; 1
// otherwise or on error (a missing redis-server names its Debian package).
import type { Command } from 'commander';
import { redlockDemoHolds, runRedlockDemo, type RedlockReport } from '../demo/redlock.js';
import { DemoSetupError } from '../demo/redis-errors.js';
import { runDemo } from './demo-run.js';

function printSummary(r: RedlockReport, holds: boolean, out: (line: string) => void): void {
  out('');
  out('== Verdict');
  const red = r.redlock;
  out(
    `Redlock: paused holder ${red.pausedHolder.staleWritesLanded} stale write(s) landed; ` +
      `clock jump ${red.clockJump.overlaps} overlap(s); restart ${red.restart.overlaps} overlap(s)`,
  );
  const ten = r.tenure;
  out(
    `tenure:  paused holder ${ten.pausedHolder.staleWritesRejected} stale write(s) rejected, ` +
      `${ten.pausedHolder.staleWritesLanded} landed; clock jump ${ten.clockJump.overlaps} ` +
      `overlap(s); restart ${ten.restart.overlaps} overlap(s)`,
  );
  out(
    holds
      ? 'OK: Redlock failed each time; tenure kept one holder at a time and fenced the late write.'
      : 'UNEXPECTED: the runs did not show the difference (see above).',
  );
}

export function registerRedlockDemo(demo: Command): void {
  demo
    .command('redlock')
    .description(
      "Redlock's failures with real Redis (paused holder, clock jump, restart without fsync), " +
        'then tenure with a fence under the same faults',
    )
    .option('--json', 'print exactly one JSON object on stdout; the timeline goes to stderr')
    .action(async (flags: { json?: boolean }) => {
      const headline = 'Redlock under a pause, a clock jump and a restart; then tenure';
      const code = await runDemo(
        'redlock',
        flags.json === true,
        headline,
        async (d) => {
          const report = await runRedlockDemo(d.t, d.signal);
          const holds = redlockDemoHolds(report);
          printSummary(report, holds, d.out);
          if (d.json) process.stdout.write(`${JSON.stringify(report)}\n`);
          return holds ? 0 : 1;
        },
        (e) => e instanceof DemoSetupError,
      );
      process.exit(code);
    });
}
