// Real clusters for tests: 1 or 3 members of Debian's etcd 3.4 or of tenure, started with the
// same etcd flags on 127.0.0.1 ports chosen by the OS, data in temporary directories, every
// process stopped by PID. The same test can then run against either system.
//
//   const cluster = await startCluster({ kind: 'etcd', size: 3 });
//   try { ... cluster.endpoints ... } finally { await cluster.stop(); }
import { MEMBER_NODE_ARGS, newMemberFlags } from '../../src/launcher/member-command.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../helpers.js';
import { track } from '../../src/launcher/processes.js';
import { etcdctl, type EtcdctlResult } from './etcdctl.js';
import { freePorts } from '../../src/launcher/ports.js';

export { etcdctl, EtcdctlProcess, type EtcdctlResult } from './etcdctl.js';

export type BackendKind = 'etcd' | 'tenure';

export interface ClusterOptions {
  readonly kind: BackendKind;
  /** Members; 3 for the compatibility suites. */
  readonly size: 1 | 3;
  /** Where the temporary data directories go (a fresh subdirectory is made); default os.tmpdir(). */
  readonly dataRoot?: string;
  /** Extra environment for every member process. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Raft timing. etcd always gets these flags, with etcd's defaults (100 ms, 1000 ms). tenure
   * gets them only when set here, so its flag surface stays the one listed in the README.
   */
  readonly heartbeatIntervalMs?: number;
  readonly electionTimeoutMs?: number;
  /** Extra flags for every member, after the common ones. */
  readonly extraArgs?: readonly string[];
  /** startCluster waits this long for the cluster to serve reads; default 30 000 ms; 0 = don't. */
  readonly readyTimeoutMs?: number;
}

export interface Cluster {
  readonly kind: BackendKind;
  readonly size: number;
  readonly names: readonly string[];
  /** Client URLs, http://127.0.0.1:PORT, by member index. */
  readonly endpoints: readonly string[];
  readonly peerUrls: readonly string[];
  /** Current PIDs by member index; undefined for a member that is not running. */
  readonly pids: ReadonlyArray<number | undefined>;
  readonly dataDirs: readonly string[];
  /** Send `signal` to member i by PID; for terminating signals, wait until it has exited. */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Start member i again with the same flags and data directory (it must have exited). */
  restart(i: number): Promise<void>;
  /** Poll `etcdctl endpoint health` on every running member until all answer, or throw. */
  waitReady(timeoutMs: number): Promise<void>;
  /** Last output lines (stdout and stderr interleaved) of member i. */
  logTail(i: number, lines?: number): string;
  /** SIGTERM every member, SIGKILL after a bound, wait for the exits, remove the data. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

// Named limits.
/** Output lines kept per member for diagnostics. */
const logLinesMax = 400;
/** After SIGTERM, how long a member may take to exit before SIGKILL. */
const stopGraceMs = 5_000;
/** Pause between readiness polls. */
const readyPollIntervalMs = 100;
/** Attempts with fresh ports when a port was taken between our probe and the member's bind. */
const portAttemptsMax = 3;
/** etcd's defaults (embed/config.go), passed explicitly so the timing is pinned. */
const heartbeatIntervalMsDefault = 100;
const electionTimeoutMsDefault = 1000;
const readyTimeoutMsDefault = 30_000;

/** Temporary data roots of clusters not yet stopped, removed if the test process exits early. */
const liveRoots = new Set<string>();
process.on('exit', () => {
  for (const root of liveRoots) rmSync(root, { recursive: true, force: true });
});

interface Member {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  readonly args: readonly string[];
  child: ChildProcess | undefined;
  /** Stopped on purpose by kill(); waitReady does not expect it to answer. */
  down: boolean;
  exited: Promise<void>;
  readonly log: string[];
  partial: string;
}

const terminating = new Set<NodeJS.Signals>(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGHUP']);

function commandFor(kind: BackendKind): { file: string; prefix: string[] } {
  if (kind === 'etcd') return { file: 'etcd', prefix: [] };
  return {
    file: process.execPath,
    prefix: [...MEMBER_NODE_ARGS, join(repoRoot(), 'bin', 'tenure'), 'start'],
  };
}

function memberEnv(extra: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // ETCD_* variables in the caller's environment would be read by etcd as flags.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) env[k] = v;
  return { ...env, ...extra };
}

class RealCluster implements Cluster {
  readonly kind: BackendKind;
  readonly #members: Member[];
  readonly #root: string;
  readonly #env: Readonly<Record<string, string>> | undefined;
  #stopped = false;

  constructor(kind: BackendKind, members: Member[], root: string, env?: Record<string, string>) {
    this.kind = kind;
    this.#members = members;
    this.#root = root;
    this.#env = env;
    liveRoots.add(root);
    for (let i = 0; i < members.length; i++) this.#spawn(i);
  }

  get size(): number {
    return this.#members.length;
  }
  get names(): readonly string[] {
    return this.#members.map((m) => m.name);
  }
  get endpoints(): readonly string[] {
    return this.#members.map((m) => m.clientUrl);
  }
  get peerUrls(): readonly string[] {
    return this.#members.map((m) => m.peerUrl);
  }
  get dataDirs(): readonly string[] {
    return this.#members.map((m) => m.dataDir);
  }
  get pids(): ReadonlyArray<number | undefined> {
    return this.#members.map((m) => (this.#running(m) ? m.child?.pid : undefined));
  }

  #member(i: number): Member {
    const m = this.#members[i];
    if (m === undefined) throw new RangeError(`no member ${i} in a cluster of ${this.size}`);
    return m;
  }

  #running(m: Member): boolean {
    return m.child !== undefined && m.child.exitCode === null && m.child.signalCode === null;
  }

  #spawn(i: number): void {
    const m = this.#member(i);
    const { file, prefix } = commandFor(this.kind);
    const child = spawn(file, [...prefix, ...m.args], {
      env: memberEnv(this.#env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    m.child = track(child);
    const onData = (b: Buffer): void => {
      const parts = (m.partial + b.toString()).split('\n');
      m.partial = parts.pop() ?? '';
      m.log.push(...parts);
      if (m.log.length > logLinesMax) m.log.splice(0, m.log.length - logLinesMax);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    m.exited = new Promise((resolve) => {
      child.on('error', (e) => {
        m.log.push(`[harness] spawn failed: ${e.message}`);
        resolve();
      });
      child.on('exit', (code, signal) => {
        m.log.push(`[harness] exited with code ${code} signal ${signal}`);
        resolve();
      });
    });
  }

  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.#member(i);
    const pid = m.child?.pid;
    if (!this.#running(m) || pid === undefined) return;
    process.kill(pid, signal);
    if (terminating.has(signal)) {
      m.down = true;
      await this.#waitExit(m, pid);
    }
  }

  async #waitExit(m: Member, pid: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (this.#running(m)) process.kill(pid, 'SIGKILL');
        resolve();
      }, stopGraceMs);
    });
    await Promise.race([m.exited, bound]);
    await m.exited;
    clearTimeout(timer);
  }

  async restart(i: number): Promise<void> {
    const m = this.#member(i);
    if (this.#stopped) throw new Error('cluster is stopped');
    if (this.#running(m)) throw new Error(`member ${i} (${m.name}) is still running`);
    await m.exited;
    m.log.push('[harness] restart');
    m.down = false;
    this.#spawn(i);
  }

  logTail(i: number, lines = 20): string {
    const m = this.#member(i);
    const all = m.partial === '' ? m.log : [...m.log, m.partial];
    return all.slice(-lines).join('\n');
  }

  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: EtcdctlResult | undefined;
    for (;;) {
      const crashed = this.#members.filter((m) => !m.down && !this.#running(m));
      if (crashed.length > 0) {
        const names = crashed.map((m) => m.name).join(', ');
        throw new Error(this.#describeFailure(`has exited member(s) ${names}`, last));
      }
      const running = this.#members.filter((m) => !m.down);
      if (running.length === 0) break;
      last = await etcdctl(
        running.map((m) => m.clientUrl),
        ['endpoint', 'health', '--dial-timeout=1s', '--command-timeout=2s'],
        { budgetMs: 5_000 },
      );
      if (last.code === 0) return;
      if (Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, readyPollIntervalMs));
    }
    throw new Error(this.#describeFailure(`not ready after ${timeoutMs} ms`, last));
  }

  #describeFailure(what: string, last: EtcdctlResult | undefined): string {
    const parts = [`${this.kind} cluster of ${this.size} ${what}`];
    if (last !== undefined) {
      parts.push(`last \`etcdctl endpoint health\` (exit ${last.code}):`);
      parts.push((last.stdout + last.stderr).trim());
    }
    this.#members.forEach((m, i) => {
      const state = this.#running(m) ? `running pid ${m.child?.pid}` : 'not running';
      parts.push(`--- member ${i} ${m.name} ${m.clientUrl} (${state}), last output:`);
      parts.push(this.logTail(i, 15));
    });
    return parts.join('\n');
  }

  /** True if some member failed because a port we picked was taken meanwhile. */
  portTaken(): boolean {
    return this.#members.some(
      (m) => !this.#running(m) && m.log.some((l) => /address already in use/i.test(l)),
    );
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    // One member at a time: an etcd leader given SIGTERM first hands leadership to a follower,
    // which needs the followers still up; stopping all at once makes it wait out its timeout.
    for (const m of this.#members) {
      const pid = m.child?.pid;
      if (!this.#running(m) || pid === undefined) continue;
      process.kill(pid, 'SIGTERM');
      await this.#waitExit(m, pid);
    }
    rmSync(this.#root, { recursive: true, force: true });
    liveRoots.delete(this.#root);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

function memberArgs(
  options: ClusterOptions,
  m: { name: string; clientUrl: string; peerUrl: string; dataDir: string },
  initialCluster: string,
  token: string,
): string[] {
  const args = newMemberFlags(m, initialCluster, token);
  const heartbeat = options.heartbeatIntervalMs;
  const election = options.electionTimeoutMs;
  if (options.kind === 'etcd') {
    args.push(
      `--heartbeat-interval=${heartbeat ?? heartbeatIntervalMsDefault}`,
      `--election-timeout=${election ?? electionTimeoutMsDefault}`,
      // zap to stderr: capnslog is deprecated in 3.4 and would print a warning per start.
      '--logger=zap',
      '--log-outputs=stderr',
    );
  } else {
    if (heartbeat !== undefined) args.push(`--heartbeat-interval=${heartbeat}`);
    if (election !== undefined) args.push(`--election-timeout=${election}`);
  }
  args.push(...(options.extraArgs ?? []));
  return args;
}

async function startOnce(options: ClusterOptions): Promise<RealCluster> {
  const ports = await freePorts(options.size * 2);
  const root = mkdtempSync(join(options.dataRoot ?? tmpdir(), `tenure-${options.kind}-`));
  const token = `test-${randomBytes(6).toString('hex')}`;
  const specs = Array.from({ length: options.size }, (_, i) => ({
    name: `n${i}`,
    clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
    peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
    dataDir: join(root, `n${i}`),
  }));
  const initialCluster = specs.map((s) => `${s.name}=${s.peerUrl}`).join(',');
  const members: Member[] = specs.map((s) => ({
    ...s,
    args: memberArgs(options, s, initialCluster, token),
    child: undefined,
    down: false,
    exited: Promise.resolve(),
    log: [],
    partial: '',
  }));
  return new RealCluster(options.kind, members, root, options.env ? { ...options.env } : undefined);
}

/**
 * Start a cluster and (unless readyTimeoutMs is 0) wait until every member serves linearizable
 * reads. On failure every process is stopped and the data removed before the error is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const readyTimeoutMs = options.readyTimeoutMs ?? readyTimeoutMsDefault;
  for (let attempt = 1; ; attempt++) {
    const cluster = await startOnce(options);
    if (readyTimeoutMs === 0) return cluster;
    try {
      await cluster.waitReady(readyTimeoutMs);
      return cluster;
    } catch (e) {
      const retry = cluster.portTaken() && attempt < portAttemptsMax;
      await cluster.stop();
      if (!retry) throw e;
    }
  }
}
