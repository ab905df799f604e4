// The fence-previous demo (STONITH, docs/stuck-leaders.md): a new leader starts only after the
// previous one has been made harmless, for effects that can check neither a token nor a key.
//
// Fenced run:
//   1. a leader child process (fence-leader-child.ts) wins, with {"pid": N} as its election
//      value, and writes to the resource (a log file, each line naming its writer's PID);
//   2. the demo freezes it with SIGSTOP: it can no longer stop itself, and its lease runs out;
//   3. a second elector (in the demo process) wins; its fencePrevious reads the previous leader's
//      PID from `term.previous`, sends SIGKILL and waits until the process is gone;
//   4. only then does onStartedLeading run, and the new leader writes.
// The log then shows no write by the old PID after the new term's first write.
//
// Failing run: the same, but the hook cannot fence (it throws, as when the fencing device is
// unreachable): the new leader never starts, each attempt reports RecipeError FENCE_FAILED, and
// the frozen leader is stopped by the demo at the end, by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LeaderElector, RecipeError, connect, type Client } from '../client/index.js';
import type { Timeline } from './timeline.js';
import { pidExists } from '../launcher/processes.js';

// Named limits.
/** Bound on each wait of the demo (a child's first line, a takeover), a hang guard. */
const stepTimeoutMs = 30_000;
/** Writes the old leader makes before it is frozen. */
const writesBeforeFreeze = 3;
/** Pause between checks (the log, a PID), in ms. */
const pollIntervalMs = 20;
/** Failed fence attempts the failing run waits for. */
const fenceFailuresShown = 2;
/** The candidates' pause between attempts, in ms. */
const retryIntervalMs = 300;
/** Bound on the fencing hook, in ms. */
const fencePreviousTimeoutMs = 5_000;

const childPath = fileURLToPath(new URL('./fence-leader-child.js', import.meta.url));

export interface FencePreviousOptions {
  readonly endpoints: readonly string[];
  /** Lease TTL of both leaders, in seconds (the server minimum is 2). */
  readonly ttlSeconds: number;
  readonly timeline: Timeline;
  readonly signal?: AbortSignal;
}

export interface LogWrite {
  readonly pid: number;
  readonly token: string;
  readonly seq: number;
}

export interface FencedRun {
  readonly election: string;
  readonly oldLeader: { pid: number; token: string; frozenAtMs: number; writes: number };
  readonly killed: { pid: number; signal: 'SIGKILL'; killedAtMs: number; goneAtMs: number };
  readonly newLeader: { pid: number; token: string; previousToken: string; startedAtMs: number };
  /** Writes by the old PID after the new leader's first write, in the log's order. */
  readonly oldWritesAfterNewTerm: number;
  readonly log: readonly LogWrite[];
}

export interface FailingRun {
  readonly election: string;
  readonly oldLeader: { pid: number; token: string; frozenAtMs: number };
  readonly fenceFailures: number;
  readonly errors: readonly string[];
  readonly newLeaderStarted: boolean;
  /** The frozen leader, stopped by the demo by PID at the end. */
  readonly stoppedPid: number;
}

export interface FencePreviousReport {
  readonly fenced: FencedRun;
  readonly failing: FailingRun;
}

/** The demo's claims, from the report alone. */
export function fenceDemoHolds(r: FencePreviousReport): boolean {
  const f = r.fenced;
  return (
    f.newLeader.startedAtMs >= f.killed.goneAtMs &&
    f.killed.pid === f.oldLeader.pid &&
    f.newLeader.previousToken === f.oldLeader.token &&
    BigInt(f.newLeader.token) > BigInt(f.oldLeader.token) &&
    f.oldWritesAfterNewTerm === 0 &&
    r.failing.fenceFailures >= fenceFailuresShown &&
    !r.failing.newLeaderStarted
  );
}

function abortable(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_r, reject) => {
    if (signal?.aborted === true) reject(signal.reason as Error);
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/** Poll `cond` until it holds; throws naming `what` after stepTimeoutMs or on abort. */
async function until(what: string, cond: () => boolean, signal?: AbortSignal): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    signal?.throwIfAborted();
    if (performance.now() - start > stepTimeoutMs) {
      throw new Error(`fence-previous demo: not within ${stepTimeoutMs} ms: ${what}`);
    }
    await new Promise((r) => setTimeout(r, pollIntervalMs));
  }
}

function readLog(path: string): LogWrite[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LogWrite);
}

/**
 * Spawn a leader child (fence-leader-child.ts) with an IPC channel besides its output pipes: the
 * child exits when the channel closes, so it does not outlive a demo that died without stopping
 * it (SIGKILL, a crash).
 */
export function spawnLeaderChild(
  endpoints: readonly string[],
  name: string,
  logPath: string,
  ttlSeconds: number,
): ChildProcess {
  const args = [childPath, endpoints.join(','), name, logPath, `${ttlSeconds}`];
  return spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
}

/** A leader child: its first JSON line ("leading"), stopped by PID. */
class LeaderChild {
  readonly pid: number;
  readonly #child: ChildProcess;
  #leading: { token: string } | undefined;
  #output = '';

  constructor(endpoints: readonly string[], name: string, logPath: string, ttlSeconds: number) {
    this.#child = spawnLeaderChild(endpoints, name, logPath, ttlSeconds);
    if (this.#child.pid === undefined) throw new Error('fence-previous demo: no child pid');
    this.pid = this.#child.pid;
    let partial = '';
    this.#child.stdout?.on('data', (b: Buffer) => {
      this.#output += b.toString();
      const lines = (partial + b.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const m = JSON.parse(line) as { type?: string; token?: string };
        if (m.type === 'leading' && m.token !== undefined) this.#leading = { token: m.token };
      }
    });
    this.#child.stderr?.on('data', (b: Buffer) => (this.#output += b.toString()));
  }

  async leading(signal?: AbortSignal): Promise<{ token: string }> {
    await until(
      `child ${this.pid} leads\n${this.#output}`,
      () => this.#leading !== undefined,
      signal,
    );
    return this.#leading ?? { token: '0' };
  }

  /** SIGKILL by PID (it ends a stopped process too) and wait for the exit. */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.#child.once('exit', () => r()));
    process.kill(this.pid, 'SIGKILL');
    await exited;
  }
}

/** Start a leader child on a fresh election, let it write, then freeze it. */
async function frozenLeader(
  o: FencePreviousOptions,
  name: string,
  logPath: string,
  who: string,
): Promise<{ child: LeaderChild; token: string; frozenAtMs: number }> {
  const t = o.timeline;
  const child = new LeaderChild(o.endpoints, name, logPath, o.ttlSeconds);
  t.event(who, `started, pid ${child.pid}, campaigns for ${name}`);
  try {
    const { token } = await child.leading(o.signal);
    t.event(who, `leads ${name}, token ${token}, value {"pid":${child.pid}}`);
    await until(
      `${writesBeforeFreeze} writes by ${child.pid}`,
      () => readLog(logPath).filter((w) => w.pid === child.pid).length >= writesBeforeFreeze,
      o.signal,
    );
    process.kill(child.pid, 'SIGSTOP');
    const frozenAtMs = Math.round(t.elapsedMs());
    t.event('demo', `SIGSTOP pid ${child.pid}: frozen, it cannot stop itself; its lease runs out`);
    return { child, token, frozenAtMs };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

async function fencedRun(o: FencePreviousOptions, client: Client, dir: string): Promise<FencedRun> {
  const t = o.timeline;
  const name = `demo/fence-previous/${randomBytes(4).toString('hex')}`;
  const logPath = join(dir, 'resource-fenced.log');
  writeFileSync(logPath, '');
  const old = await frozenLeader(o, name, logPath, 'leader-1');
  let killed: FencedRun['killed'] | undefined;
  let started: FencedRun['newLeader'] | undefined;
  const elector = new LeaderElector(client, {
    name,
    identity: JSON.stringify({ pid: process.pid }),
    ttlSeconds: o.ttlSeconds,
    retryIntervalMs,
    fencePreviousTimeoutMs,
    fencePrevious: async ({ previous, signal }) => {
      const { pid } = JSON.parse(previous.value.toString()) as { pid: number };
      t.event('leader-2', `won; previous leader token ${previous.token}, pid ${pid}: SIGKILL`);
      const killedAtMs = Math.round(t.elapsedMs());
      process.kill(pid, 'SIGKILL');
      await until(`pid ${pid} gone`, () => !pidExists(pid), signal);
      killed = { pid, signal: 'SIGKILL', killedAtMs, goneAtMs: Math.round(t.elapsedMs()) };
      t.event('leader-2', `pid ${pid} is gone: the previous leader is fenced`);
    },
    onStartedLeading: ({ token, term }) => {
      const startedAtMs = Math.round(t.elapsedMs());
      appendFileSync(
        logPath,
        `${JSON.stringify({ pid: process.pid, token: `${token}`, seq: 1 })}\n`,
      );
      started = {
        pid: process.pid,
        token: token.toString(),
        previousToken: term.previous?.token.toString() ?? '',
        startedAtMs,
      };
      t.event('leader-2', `started leading, token ${token}; wrote to the resource`);
    },
  });
  try {
    elector.start();
    await Promise.race([
      until('leader-2 starts', () => started !== undefined),
      abortable(o.signal),
    ]);
  } finally {
    await elector.stop();
    await old.child.stop();
  }
  const log = readLog(logPath);
  const firstNew = log.findIndex((w) => w.pid === process.pid);
  const oldAfter = log.filter((w, i) => i > firstNew && w.pid === old.child.pid).length;
  t.event(
    'resource',
    `${log.length} writes; by pid ${old.child.pid} after the new term: ${oldAfter}`,
  );
  if (killed === undefined || started === undefined) throw new Error('fence-previous: no outcome');
  return {
    election: name,
    oldLeader: {
      pid: old.child.pid,
      token: old.token,
      frozenAtMs: old.frozenAtMs,
      writes: log.filter((w) => w.pid === old.child.pid).length,
    },
    killed,
    newLeader: started,
    oldWritesAfterNewTerm: oldAfter,
    log,
  };
}

async function failingRun(
  o: FencePreviousOptions,
  client: Client,
  dir: string,
): Promise<FailingRun> {
  const t = o.timeline;
  const name = `demo/fence-previous/${randomBytes(4).toString('hex')}`;
  const logPath = join(dir, 'resource-failing.log');
  writeFileSync(logPath, '');
  const old = await frozenLeader(o, name, logPath, 'leader-1');
  const errors: string[] = [];
  let startedLeading = false;
  const elector = new LeaderElector(client, {
    name,
    identity: JSON.stringify({ pid: process.pid }),
    ttlSeconds: o.ttlSeconds,
    retryIntervalMs,
    fencePreviousTimeoutMs,
    fencePrevious: ({ previous }) => {
      t.event('leader-2', `won; previous leader token ${previous.token}: no fencing device`);
      return Promise.reject(new Error('fencing device unreachable'));
    },
    onError: (e) => {
      if (e instanceof RecipeError && e.code === 'FENCE_FAILED') {
        errors.push(e.message);
        t.event(
          'leader-2',
          `FENCE_FAILED: resigned, does not start; retries in ${retryIntervalMs} ms`,
        );
      }
    },
    onStartedLeading: () => {
      startedLeading = true;
      t.event('leader-2', 'started leading (must not happen)');
    },
  });
  try {
    elector.start();
    await Promise.race([
      until(`${fenceFailuresShown} failed fences`, () => errors.length >= fenceFailuresShown),
      abortable(o.signal),
    ]);
  } finally {
    await elector.stop();
    t.event('demo', `stopping the frozen leader, pid ${old.child.pid}, by SIGKILL`);
    await old.child.stop();
  }
  return {
    election: name,
    oldLeader: { pid: old.child.pid, token: old.token, frozenAtMs: old.frozenAtMs },
    fenceFailures: errors.length,
    errors,
    newLeaderStarted: startedLeading,
    stoppedPid: old.child.pid,
  };
}

export async function runFencePrevious(o: FencePreviousOptions): Promise<FencePreviousReport> {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-fence-demo-'));
  const client = await connect({ endpoints: [...o.endpoints] });
  try {
    o.timeline.heading('== Fenced: the new leader kills the frozen one first');
    const fenced = await fencedRun(o, client, dir);
    o.timeline.heading('== Failing: the hook cannot fence; the new leader must not start');
    const failing = await failingRun(o, client, dir);
    return { fenced, failing };
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
