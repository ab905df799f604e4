// What every `tenure demo <name>` shares: the timeline on stdout (on stderr with --json, so
// stdout holds exactly one JSON object), Ctrl-C / SIGTERM turned into an abort that the demo's
// finally blocks answer by stopping what they started, an optional throwaway 3-member cluster
// (stopped by PID and its directory removed at the end) unless `--endpoints` names a running
// one, and one way of reporting a failure. The exit code is the demo's verdict.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Timeline } from '../demo/timeline.js';
import { startCluster, type Cluster } from '../launcher/cluster.js';

export interface DemoRun {
  readonly json: boolean;
  /** One line of the human-readable output. */
  readonly out: (line: string) => void;
  readonly t: Timeline;
  /** Aborts on SIGINT or SIGTERM. */
  readonly signal: AbortSignal;
}

/** Errors whose message is the whole story (a missing package, bad setup): no stack trace. */
export type PlainError = (e: unknown) => boolean;

// Named limits.
/** How long the throwaway cluster may take to elect a leader. */
const healthyTimeoutMs = 30_000;

/**
 * Run demo `name`: print `headline`, run `body` (its result is the exit code), report a failure
 * as `tenure demo <name>: …` on stderr with exit code 1.
 */
export async function runDemo(
  name: string,
  json: boolean,
  headline: string,
  body: (d: DemoRun) => Promise<number>,
  plain: PlainError = () => false,
): Promise<number> {
  const out = (line: string): void => {
    (json ? process.stderr : process.stdout).write(`${line}\n`);
  };
  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  out(`tenure demo ${name}: ${headline}`);
  try {
    return await body({ json, out, t: new Timeline(out), signal: abort.signal });
  } catch (e) {
    const text = plain(e)
      ? (e as Error).message
      : abort.signal.aborted
        ? 'interrupted; stopped what it started'
        : e instanceof Error
          ? (e.stack ?? e.message)
          : String(e);
    process.stderr.write(`tenure demo ${name}: ${text}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Run `fn` against the cluster at `endpoints` (comma-separated client URLs) or, without them, a
 * throwaway 3-member tenure cluster in a temporary directory, stopped and removed afterwards.
 */
export async function onCluster<T>(
  d: DemoRun,
  endpoints: string | undefined,
  fn: (endpoints: string[]) => Promise<T>,
): Promise<T> {
  if (endpoints !== undefined) {
    const urls = endpoints.split(',').map((s) => s.trim());
    d.t.event('cluster', `using ${urls.join(', ')}`);
    return fn(urls);
  }
  const dir = mkdtempSync(join(tmpdir(), 'tenure-demo-'));
  let cluster: Cluster | undefined;
  try {
    cluster = await startThrowawayCluster(dir, d.t, d.signal);
    d.t.event('cluster', `healthy: ${cluster.endpoints.join(', ')} (data in ${cluster.dir})`);
    return await fn([...cluster.endpoints]);
  } finally {
    if (cluster !== undefined) {
      const pids = cluster.pids.filter((p) => p !== undefined).join(', ');
      d.t.event('cluster', `stopping pids ${pids}`);
      await cluster.stop();
      d.t.event('cluster', 'stopped');
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Start a throwaway cluster in `dir` and wait for a leader; on failure, nothing is left running. */
function startThrowawayCluster(dir: string, t: Timeline, signal: AbortSignal): Promise<Cluster> {
  return startCluster({
    kind: 'tenure',
    size: 3,
    tmpRoot: dir,
    logs: 'file',
    // The demo's own Ctrl-C handler stops them (and its workers) in its finally.
    tracked: false,
    readyTimeoutMs: healthyTimeoutMs,
    signal,
    onSpawned: (c) =>
      t.event(
        'cluster',
        `starting 3 members, pids ${c.pids.filter((p) => p !== undefined).join(', ')}`,
      ),
    // A member that lost its port to another process exits at once; the launcher tries fresh ports.
    onRetry: (e) =>
      t.event('cluster', `did not start (${String(e).split('\n')[0]}); retrying on other ports`),
  });
}
