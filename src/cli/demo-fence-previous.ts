// `tenure demo fence-previous`: the STONITH scenario of src/demo/fence-previous.ts with real
// processes — by default against a throwaway 3-member tenure cluster (demo.ts's), or against a
// running one (`--endpoints`). Human-readable timeline on stdout; with `--json`, exactly one JSON
// object on stdout and the timeline on stderr. Exit 0 when the new leader started only after the
// frozen one was gone and a failing hook kept it from starting; 1 otherwise; 2 for bad usage.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import {
  fenceDemoHolds,
  runFencePrevious,
  type FencePreviousReport,
} from '../demo/fence-previous.js';
import { Timeline } from '../demo/timeline.js';
import type { Cluster } from '../launcher/cluster.js';
import { integer } from './args.js';

interface FencePreviousFlags {
  readonly endpoints?: string;
  readonly json?: boolean;
  readonly ttl: number;
}

type StartCluster = (dir: string, t: Timeline, signal: AbortSignal) => Promise<Cluster>;

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

async function run(flags: FencePreviousFlags, startCluster: StartCluster): Promise<number> {
  const json = flags.json === true;
  const out = (line: string): void => {
    (json ? process.stderr : process.stdout).write(`${line}\n`);
  };
  const t = new Timeline(out);
  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  out('tenure demo fence-previous: a new leader fences (kills) the frozen one before it starts');
  let dir: string | undefined;
  let cluster: Cluster | undefined;
  try {
    let endpoints: string[];
    if (flags.endpoints !== undefined) {
      endpoints = flags.endpoints.split(',').map((s) => s.trim());
      t.event('cluster', `using ${endpoints.join(', ')}`);
    } else {
      dir = mkdtempSync(join(tmpdir(), 'tenure-demo-'));
      cluster = await startCluster(dir, t, abort.signal);
      endpoints = [...cluster.endpoints];
      t.event('cluster', `healthy: ${endpoints.join(', ')}`);
    }
    const report = await runFencePrevious({
      endpoints,
      ttlSeconds: flags.ttl,
      timeline: t,
      signal: abort.signal,
    });
    const holds = fenceDemoHolds(report);
    printSummary(report, holds, out);
    if (json) process.stdout.write(`${JSON.stringify({ ok: holds, ...report })}\n`);
    return holds ? 0 : 1;
  } catch (e) {
    const text = abort.signal.aborted
      ? 'interrupted; stopping what it started'
      : e instanceof Error
        ? (e.stack ?? e.message)
        : String(e);
    process.stderr.write(`tenure demo fence-previous: ${text}\n`);
    return 1;
  } finally {
    if (cluster !== undefined) {
      t.event('cluster', `stopping pids ${cluster.pids.filter((p) => p !== undefined).join(', ')}`);
      await cluster.stop();
      t.event('cluster', 'stopped');
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function registerFencePrevious(demo: Command, startCluster: StartCluster): void {
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
      process.exit(await run(flags, startCluster));
    });
}
