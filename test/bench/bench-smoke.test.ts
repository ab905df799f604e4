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

function runBench(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return runCli(['bench', ...args], budgetMs, { env, killSignal: 'SIGINT' });
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

test('tenure bench --tls --vs postgres is refused, not run in plain text', async () => {
  const run = await runBench(['--tls', '--vs', 'postgres', '--quick'], process.env);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /--tls covers tenure and etcd only/);
});
