// The alert rules in deploy/prometheus against what they are for. First `promtool test rules` on
// their synthetic series, and on copies with a rule planted wrong (which must fail: the check can
// tell). Then Debian's Prometheus scraping a 3-member tenure cluster's /metrics with the rules
// loaded: stopping 2 of the 3 members loses the quorum, and etcdNoLeader fires for the one left;
// once they are back it clears. Every process is ours, on 127.0.0.1, stopped by PID.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePorts } from '../../src/launcher/ports.js';
import { removeDir, stopProcess, track, trackDir } from '../../src/launcher/processes.js';
import { startCluster } from '../cluster/cluster.js';
import { repoRoot } from '../support/paths.js';
import { eventually } from '../support/poll.js';
import { runChild } from '../support/run-child.js';

const rulesDir = join(repoRoot(), 'deploy', 'prometheus');
const RULES = 'etcd-alerts.yml';
const RULES_TEST = 'etcd-alerts.test.yml';
/** Named limits. */
const promtoolBudgetMs = 60_000;
/** Prometheus starting and finding every target up. */
const targetsUpMs = 60_000;
/** etcdNoLeader waits `for: 1m` before it fires; scrapes and evaluations every second. */
const alertFiresMs = 180_000;
const alertClearsMs = 120_000;
/** Lines of Prometheus's log quoted when a wait fails. */
const logTailLines = 20;

function promtoolTest(dir: string): Promise<{ code: number | null; out: string }> {
  return runChild('promtool', ['test', 'rules', RULES_TEST], promtoolBudgetMs, { cwd: dir }).then(
    (r) => ({ code: r.code, out: r.stdout + r.stderr }),
  );
}

/** A copy of the rules and their tests in a fresh directory, with `from` replaced by `to`. */
function plantedCopy(from: string, to: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-rules-'));
  trackDir(dir);
  const rules = readFileSync(join(rulesDir, RULES), 'utf8');
  assert.ok(rules.includes(from), `the rules contain ${from}`);
  writeFileSync(join(dir, RULES), rules.replace(from, to));
  copyFileSync(join(rulesDir, RULES_TEST), join(dir, RULES_TEST));
  return dir;
}

test('promtool: the rules pass their tests, and a rule planted wrong fails them', async () => {
  const ok = await promtoolTest(rulesDir);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /SUCCESS/);

  // etcdNoLeader's threshold altered: it never fires, and the test must say so.
  const noLeader = plantedCopy(
    'etcd_server_has_leader{job=~".*etcd.*"} == 0',
    'etcd_server_has_leader{job=~".*etcd.*"} == 2',
  );
  // etcdInsufficientMembers counting a bare majority as too few: fires with one member down.
  const insufficient = plantedCopy(
    'without (instance) < ((count(',
    'without (instance) <= ((count(',
  );
  try {
    for (const dir of [noLeader, insufficient]) {
      const bad = await promtoolTest(dir);
      assert.notEqual(bad.code, 0, `promtool passed a planted rule:\n${bad.out}`);
      assert.match(bad.out, /FAILED/);
    }
  } finally {
    removeDir(noLeader);
    removeDir(insufficient);
  }
});

interface Alert {
  readonly labels: Readonly<Record<string, string>>;
  readonly state: string;
}

async function api<T>(base: string, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(`${base}${path}`);
    if (!res.ok) return undefined;
    const body = (await res.json()) as { status: string; data: T };
    return body.status === 'success' ? body.data : undefined;
  } catch {
    return undefined; // not up yet
  }
}

test('Prometheus: etcdNoLeader fires when 2 of 3 tenure members stop, and clears', async (t) => {
  const cluster = await startCluster({ kind: 'tenure', size: 3 });
  const dir = mkdtempSync(join(tmpdir(), 'tenure-prometheus-'));
  trackDir(dir);
  const [port] = await freePorts(1);
  const base = `http://127.0.0.1:${String(port)}`;
  const targets = cluster.endpoints.map((e) => new URL(e).host);
  const config = join(dir, 'prometheus.yml');
  // JSON is YAML: the job's name matches the rules' job=~".*etcd.*".
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '900ms' },
      rule_files: [join(rulesDir, RULES)],
      scrape_configs: [{ job_name: 'etcd', static_configs: [{ targets }] }],
    }),
  );
  const prometheus = track(
    spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${String(port)}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    ),
  );
  let log: string[] = [];
  prometheus.stderr.on('data', (b: Buffer) => {
    log = [...log, ...b.toString().split('\n')].slice(-logTailLines);
  });
  const withLog = async <T>(what: Promise<T>): Promise<T> => {
    try {
      return await what;
    } catch (e) {
      throw new Error(`${(e as Error).message}\nprometheus log:\n${log.join('\n')}`, {
        cause: e,
      });
    }
  };
  const noLeaderAlerts = async (): Promise<Alert[] | undefined> => {
    const data = await api<{ alerts: Alert[] }>(base, '/api/v1/alerts');
    return data?.alerts.filter((a) => a.labels.alertname === 'etcdNoLeader');
  };
  try {
    await withLog(
      eventually(
        'Prometheus scraping all 3 members',
        async () => {
          const data = await api<{ activeTargets: { health: string }[] }>(base, '/api/v1/targets');
          const up = data?.activeTargets.filter((a) => a.health === 'up').length ?? 0;
          return up === 3 ? true : undefined;
        },
        targetsUpMs,
      ),
    );
    const before = await noLeaderAlerts();
    assert.deepEqual(before, [], 'no etcdNoLeader alert while the cluster is whole');

    await cluster.kill(1, 'SIGTERM');
    await cluster.kill(2, 'SIGTERM');
    const survivor = targets[0] as string;
    const firing = await withLog(
      eventually(
        `etcdNoLeader firing for ${survivor}`,
        async () => {
          const alerts = await noLeaderAlerts();
          return alerts?.find((a) => a.state === 'firing' && a.labels.instance === survivor);
        },
        alertFiresMs,
      ),
    );
    assert.equal(firing.labels.severity, 'critical');
    t.diagnostic(`etcdNoLeader firing: ${JSON.stringify(firing.labels)}`);

    await cluster.restart(1);
    await cluster.restart(2);
    await cluster.waitReady();
    await withLog(
      eventually(
        'etcdNoLeader to clear',
        async () => ((await noLeaderAlerts())?.length === 0 ? true : undefined),
        alertClearsMs,
      ),
    );
  } finally {
    await stopProcess(prometheus);
    await cluster.stop();
    removeDir(dir);
  }
});
