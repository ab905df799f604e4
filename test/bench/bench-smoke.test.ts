// `tenure bench --vs etcd --quick --json --out DIR` end to end: the JSON shape on stdout, the
// files in DIR, and no cluster or elector process left behind. No timed assertions: the figures
// of a quick run on a shared CI machine mean nothing; only their presence is checked.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli, type CliResult } from '../support/run-child.js';

/** Budget for the whole quick run; the child is killed by PID past it. */
const budgetMs = 85_000;
/**
 * Budget for the quick run of the disruption workloads on two systems: each pause trial waits
 * for the cluster to settle (pauseSettleMs), the lock failover for a 5 s TTL, the rolling
 * restart for three member starts.
 */
const disruptionBudgetMs = 300_000;

function runBench(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  budget = budgetMs,
): Promise<CliResult> {
  return runCli(['bench', ...args], budget, { env, killSignal: 'SIGINT' });
}

/** The command line of `pid`, or undefined if no such process exists. */
function cmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
}

/** PIDs of running processes whose command line mentions `needle`. */
function processesMentioning(needle: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => cmdline(pid)?.includes(needle) === true);
}

const isNum = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);

test('tenure bench --vs etcd --quick --json --out: JSON shape, files, no process left', async () => {
  // The bench makes its temporary data directories under TMPDIR: a private one lets the test
  // find any member it left behind by its --data-dir.
  const tmp = mkdtempSync(join(tmpdir(), 'tenure-bench-smoke-'));
  const out = join(tmp, 'out');
  try {
    const run = await runBench(['--vs', 'etcd', '--quick', '--json', '--out', out], {
      ...process.env,
      TMPDIR: tmp,
    });
    assert.equal(run.code, 0, `bench failed:\n${run.stderr}`);

    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.length, 1, 'stdout is one JSON document and nothing else');
    const result = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    assert.equal(result.rounds, 1);
    assert.equal(result.tls, false, 'a run without --tls says so');
    assert.match(run.stderr, /TLS off/);
    const machine = result.machine as Record<string, unknown>;
    for (const k of ['cpuModel', 'cores', 'ramGiB', 'kernel', 'node', 'etcd', 'date', 'command']) {
      assert.ok(machine[k] !== undefined && machine[k] !== null, `machine.${k}`);
    }
    const workloads = result.workloads as Array<Record<string, unknown>>;
    const names = workloads.map((w) => w.name);
    for (const name of [
      'seq-put',
      'put-throughput',
      'get-linearizable',
      'get-serializable',
      'lease-grant',
      'lease-keepalive',
      'lock-handoff',
      'watch-fanout',
      'election-failover',
      'leader-failover',
    ]) {
      assert.ok(names.includes(name), `workload ${name} reported`);
    }
    for (const w of workloads) {
      for (const sys of ['tenure', 'etcd'] as const) {
        const s = w[sys] as Record<string, unknown>;
        assert.ok(s !== null && typeof s === 'object', `${String(w.name)}.${sys}`);
        const runs = s.runs as Array<Record<string, unknown>>;
        assert.equal(runs.length, 1, `${String(w.name)}.${sys}: one run`);
        assert.equal(runs[0]?.error, undefined, `${String(w.name)}.${sys} failed`);
        assert.ok(isNum(s.p50Ms), `${String(w.name)}.${sys}.p50Ms`);
        assert.ok(isNum(s.peakRssMiB), `${String(w.name)}.${sys}.peakRssMiB`);
        if (w.opName !== 'failover') {
          assert.ok(isNum(s.opsPerSec), `${String(w.name)}.${sys}.opsPerSec`);
          assert.ok(isNum(s.p99Ms), `${String(w.name)}.${sys}.p99Ms`);
          assert.ok(isNum(s.serverCpuUsPerOp), `${String(w.name)}.${sys}.serverCpuUsPerOp`);
        }
      }
      const ratio = w.ratio as Record<string, unknown>;
      assert.ok(isNum(ratio.p50Ms), `${String(w.name)}.ratio.p50Ms`);
    }

    for (const f of ['result.json', 'report.md', ...names.map((n) => `${String(n)}.svg`)]) {
      assert.ok(existsSync(join(out, f)), `${f} written`);
    }
    assert.deepEqual(JSON.parse(readFileSync(join(out, 'result.json'), 'utf8')), result);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    assert.match(md, /\| CPU \|/);
    assert.match(md, /\| seq-put/);
    assert.match(readFileSync(join(out, 'seq-put.svg'), 'utf8'), /^<svg /);

    // Every process the bench started is gone (a recycled PID would run something else).
    const pids = result.pidsStarted as number[];
    assert.ok(pids.length >= 6, 'at least 3 tenure and 3 etcd members were started');
    for (const pid of pids) {
      const cmd = cmdline(pid);
      assert.ok(
        cmd === undefined || !/etcd|tenure|elector-child/.test(cmd),
        `process ${pid} still running: ${cmd}`,
      );
    }
    assert.deepEqual(processesMentioning(tmp), [], 'no member with a data dir under TMPDIR');
    assert.deepEqual(
      readdirSync(tmp).filter((d) => d !== 'out'),
      [],
      'temporary data directories removed',
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('tenure bench --tls --vs etcd --quick: both over TLS, the report says so', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tenure-bench-tls-smoke-'));
  const out = join(tmp, 'out');
  try {
    const args = ['--tls', '--vs', 'etcd', '--quick', '--json', '--workloads', 'put-throughput'];
    const run = await runBench([...args, '--out', out], { ...process.env, TMPDIR: tmp });
    assert.equal(run.code, 0, `bench failed:\n${run.stderr}`);
    const result = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
    assert.equal(result.tls, true);
    // The table (on stderr with --json) and the markdown report name the transport.
    assert.match(run.stderr, /tenure bench vs etcd: TLS on/);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /^# tenure bench.*TLS on/);
    const workloads = result.workloads as Array<Record<string, unknown>>;
    assert.deepEqual(
      workloads.map((w) => w.name),
      ['put-throughput'],
    );
    const w = workloads[0] ?? {};
    for (const sys of ['tenure', 'etcd'] as const) {
      const s = w[sys] as Record<string, unknown>;
      const runs = s.runs as Array<Record<string, unknown>>;
      assert.equal(runs[0]?.error, undefined, `${sys} failed over TLS`);
      assert.equal(runs[0]?.errors, 0, `${sys}: no failed puts`);
      assert.ok(isNum(s.opsPerSec), `${sys}.opsPerSec`);
      assert.ok(isNum(s.serverCpuUsPerOp), `${sys}.serverCpuUsPerOp`);
    }
    for (const pid of result.pidsStarted as number[]) {
      const cmd = cmdline(pid);
      assert.ok(cmd === undefined || !/etcd|tenure/.test(cmd), `process ${pid} still running`);
    }
    // The members' data dirs and the run's CA and certificates are gone.
    assert.deepEqual(
      readdirSync(tmp).filter((d) => d !== 'out'),
      [],
      'temporary directories removed',
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

/** Every process of `result` is gone, and nothing runs with a data dir under `tmp`. */
function assertAllStopped(result: Record<string, unknown>, tmp: string): void {
  for (const pid of result.pidsStarted as number[]) {
    const cmd = cmdline(pid);
    assert.ok(
      cmd === undefined || !/etcd|tenure|elector-child|lock-holder-child/.test(cmd),
      `process ${pid} still running: ${cmd}`,
    );
  }
  assert.deepEqual(processesMentioning(tmp), [], 'no member with a data dir under TMPDIR');
  assert.deepEqual(
    readdirSync(tmp).filter((d) => d !== 'out'),
    [],
    'temporary data directories removed',
  );
}

const disruptionNames = [
  'leader-failover-sdk',
  'leader-pause-0.5s',
  'leader-pause-1.0s',
  'leader-pause-1.5s',
  'leader-pause-2.0s',
  'rolling-restart',
  'lock-failover',
];

/** The `extra` figures each disruption workload must report, per run and as medians. */
function extraKeysOf(name: string): string[] {
  if (name.startsWith('leader-pause-')) {
    return ['trials', 'elections', 'leaderChanges', 'failedPuts'];
  }
  if (name === 'rolling-restart') return ['failedPuts', 'ackedPuts'];
  if (name === 'lock-failover') return ['ttlMs', 'targetMs', 'overTarget'];
  return [];
}

test('tenure bench --vs etcd --quick --workloads disruption: figures, labels', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tenure-bench-disruption-'));
  const out = join(tmp, 'out');
  try {
    const args = ['--vs', 'etcd', '--quick', '--json', '--workloads', 'disruption', '--out', out];
    const run = await runBench(args, { ...process.env, TMPDIR: tmp }, disruptionBudgetMs);
    assert.equal(run.code, 0, `bench failed:\n${run.stderr}`);
    const result = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
    assert.deepEqual(result.systems, ['tenure', 'etcd']);
    const timing = result.timing as Record<string, unknown>;
    const etcdDefaults = { heartbeatIntervalMs: 100, electionTimeoutMs: 1000 };
    assert.deepEqual(timing.tenure, etcdDefaults);
    assert.deepEqual(timing.etcd, etcdDefaults);
    const workloads = result.workloads as Array<Record<string, unknown>>;
    assert.deepEqual(
      workloads.map((w) => w.name),
      disruptionNames,
    );
    for (const w of workloads) {
      const name = String(w.name);
      const keys = extraKeysOf(name);
      const rows = w.extraRows as Array<Record<string, unknown>>;
      assert.deepEqual(rows.map((r) => r.key).sort(), [...keys].sort(), `${name}.extraRows`);
      for (const sys of ['tenure', 'etcd'] as const) {
        const s = w[sys] as Record<string, unknown>;
        const runs = s.runs as Array<Record<string, unknown>>;
        assert.equal(runs.length, 1, `${name}.${sys}: one run`);
        assert.equal(runs[0]?.error, undefined, `${name}.${sys} failed`);
        assert.ok(isNum(s.p50Ms), `${name}.${sys}.p50Ms (a sample succeeded)`);
        const extra = s.extra as Record<string, unknown>;
        const runExtra = (runs[0]?.extra ?? {}) as Record<string, unknown>;
        for (const k of keys) {
          assert.ok(isNum(extra[k]), `${name}.${sys}.extra.${k}`);
          assert.ok(isNum(runExtra[k]), `${name}.${sys}.runs[0].extra.${k}`);
        }
        if (name.startsWith('leader-pause-')) assert.equal(runExtra.trials, 1, `${name} trials`);
        if (name === 'rolling-restart') assert.ok(Number(runExtra.ackedPuts) > 0, 'puts acked');
        if (name === 'lock-failover') {
          assert.equal(runExtra.ttlMs, 5000);
          assert.equal(runExtra.targetMs, 5500);
        }
      }
    }
    // The table (on stderr with --json) and the markdown label the timing and the new rows.
    assert.match(run.stderr, /tenure 100\/1000 ms +etcd 100\/1000 ms/);
    assert.match(run.stderr, /leader-pause-1\.5s +write gap median, ms/);
    assert.match(run.stderr, /elections \(term advance\), sum over trials/);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    assert.match(
      md,
      /\| Raft heartbeat\/election timeout \| tenure 100\/1000 ms, etcd 100\/1000 ms \|/,
    );
    assert.match(md, /\| lock-failover \(/);
    assertAllStopped(result, tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('tenure bench --vs etcd --etcd-timing 50/500: etcd at 50/500 ms, labelled so', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'tenure-bench-etcd50-'));
  const out = join(tmp, 'out');
  try {
    const args = ['--vs', 'etcd', '--etcd-timing', '50/500', '--quick', '--json'];
    const run = await runBench(
      [...args, '--workloads', 'leader-pause-2.0s', '--out', out],
      { ...process.env, TMPDIR: tmp },
      disruptionBudgetMs,
    );
    assert.equal(run.code, 0, `bench failed:\n${run.stderr}`);
    const result = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
    assert.deepEqual(result.systems, ['tenure', 'etcd-50/500']);
    const timing = result.timing as Record<string, unknown>;
    assert.deepEqual(timing['etcd-50/500'], { heartbeatIntervalMs: 50, electionTimeoutMs: 500 });
    const w = (result.workloads as Array<Record<string, unknown>>)[0] ?? {};
    assert.equal(w.etcd, null, 'no etcd at its defaults was run');
    const fast = w['etcd-50/500'] as Record<string, unknown>;
    const runs = fast.runs as Array<Record<string, unknown>>;
    assert.equal(runs[0]?.error, undefined, 'etcd-50/500 failed');
    assert.ok(isNum(fast.p50Ms), 'etcd-50/500.p50Ms');
    assert.ok(isNum((w.ratioEtcd50 as Record<string, unknown>).p50Ms), 'ratioEtcd50.p50Ms');
    assert.match(run.stderr, /etcd-50\/500 +tenure\/etcd-50\/500/);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    assert.match(md, /tenure 100\/1000 ms, etcd-50\/500 50\/500 ms/);
    assertAllStopped(result, tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('tenure bench --etcd-timing refuses a timing it does not know', async () => {
  const run = await runBench(['--vs', 'etcd', '--etcd-timing', '20/200', '--quick'], process.env);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /--etcd-timing takes default and 50\/500/);
});

test('tenure bench --tls --vs postgres is refused, not run in plain text', async () => {
  const run = await runBench(['--tls', '--vs', 'postgres', '--quick'], process.env);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /--tls covers tenure and etcd only/);
});
