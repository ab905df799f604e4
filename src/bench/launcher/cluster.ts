// A 3-member cluster of etcd (Debian's etcd-server) or tenure (`node bin/tenure start`) on
// 127.0.0.1, with OS-chosen ports, fresh temporary data directories, the same etcd flags for
// both, and every process stopped by its PID. Member output goes to a log file per member in the
// cluster's temporary directory (not through a pipe, so the bench process pays nothing for it);
// its tail is quoted when a member fails.
import { MEMBER_NODE_ARGS, newMemberFlags } from '../../launcher/member-command.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { electionTimeoutMs, heartbeatIntervalMs, readyTimeoutMs } from '../config.js';
import { BenchSetupError } from '../errors.js';
import { waitForLeader } from '../leader.js';
import { freePorts } from '../../launcher/ports.js';
import {
  exited,
  removeDir,
  running,
  stopProcess,
  track,
  trackDir,
} from '../../launcher/processes.js';

export type SystemKind = 'tenure' | 'etcd';

export interface ClusterOptions {
  readonly kind: SystemKind;
  /**
   * Extra `node` arguments for tenure members only, before `bin/tenure` (e.g. `--cpu-prof
   * --cpu-prof-dir=/tmp/prof`, which Node 20 refuses in NODE_OPTIONS). Ignored for etcd.
   */
  readonly memberNodeArgs?: readonly string[];
}

/** The etcd binary Debian's etcd-server installs. */
export const etcdBinary = '/usr/bin/etcd';
const members = 3;
/** Attempts with fresh ports when a port was taken between our probe and the member's bind. */
const portAttemptsMax = 3;
/** Bytes of a member's log quoted in errors. */
const logTailBytes = 3_000;

const tenureBin = fileURLToPath(new URL('../../../../bin/tenure', import.meta.url));

/** Path of the etcd binary, or a BenchSetupError naming the Debian package. */
export function findEtcd(): string {
  if (existsSync(etcdBinary)) return etcdBinary;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'etcd');
    if (dir !== '' && existsSync(p)) return p;
  }
  throw new BenchSetupError(
    `--vs etcd needs etcd 3.4 at ${etcdBinary}, from Debian's etcd-server package: ` +
      'sudo apt-get install -y etcd-server (npm test installs it when run as root)',
  );
}

/** `etcd --version`'s first line, or 'unknown'. */
export function etcdVersion(): string {
  try {
    const r = spawnSync(findEtcd(), ['--version'], { encoding: 'utf8', timeout: 5_000 });
    return (r.stdout.split('\n')[0] ?? 'unknown').replace(/^etcd Version:\s*/, '');
  } catch {
    return 'unknown';
  }
}

interface Member {
  readonly name: string;
  readonly clientUrl: string;
  readonly dataDir: string;
  readonly logFile: string;
  readonly args: readonly string[];
  child: ChildProcess | undefined;
}

export class Cluster {
  readonly kind: SystemKind;
  readonly #root: string;
  readonly #members: Member[];
  readonly #env: NodeJS.ProcessEnv;
  readonly #nodeArgs: readonly string[];
  #stopped = false;

  constructor(
    kind: SystemKind,
    root: string,
    ms: Member[],
    env: NodeJS.ProcessEnv,
    nodeArgs: readonly string[],
  ) {
    this.kind = kind;
    this.#nodeArgs = nodeArgs;
    this.#root = root;
    this.#members = ms;
    this.#env = env;
  }

  /** Client URLs, http://127.0.0.1:PORT, by member index. */
  get endpoints(): readonly string[] {
    return this.#members.map((m) => m.clientUrl);
  }

  /** Current PIDs by member index; undefined for a member that is not running. */
  get pids(): ReadonlyArray<number | undefined> {
    return this.#members.map((m) => (m.child && running(m.child) ? m.child.pid : undefined));
  }

  #member(i: number): Member {
    const m = this.#members[i];
    if (m === undefined) throw new RangeError(`no member ${i}`);
    return m;
  }

  spawnAll(): void {
    for (let i = 0; i < this.#members.length; i++) this.#spawn(i);
  }

  #spawn(i: number): void {
    const m = this.#member(i);
    const out = openSync(m.logFile, 'a');
    const [file, ...prefix] =
      this.kind === 'etcd'
        ? [findEtcd()]
        : [process.execPath, ...MEMBER_NODE_ARGS, ...this.#nodeArgs, tenureBin, 'start'];
    try {
      const child = spawn(file, [...prefix, ...m.args], {
        env: this.#env,
        stdio: ['ignore', out, out],
      });
      track(child);
      m.child = child;
    } finally {
      closeSync(out);
    }
  }

  /** kill -9 (or another signal) member i by PID and wait for its exit. */
  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#member(i).child;
    if (child?.pid === undefined || !running(child)) return;
    process.kill(child.pid, signal);
    await exited(child);
  }

  /** Start member i again on its data directory (it must have exited). */
  async restart(i: number): Promise<void> {
    const m = this.#member(i);
    if (this.#stopped) throw new Error('cluster is stopped');
    if (m.child !== undefined) await exited(m.child);
    this.#spawn(i);
  }

  /** Wait until every member answers Status naming the same leader; returns its index. */
  async waitReady(timeoutMs = readyTimeoutMs): Promise<number> {
    const crashed = this.#members.filter((m) => m.child === undefined || !running(m.child));
    if (crashed.length > 0) throw new BenchSetupError(this.describe('has exited members'));
    try {
      return await waitForLeader(this.endpoints, timeoutMs);
    } catch (e) {
      throw new BenchSetupError(this.describe(e instanceof Error ? e.message : String(e)));
    }
  }

  /** True if some member failed because a port we picked was taken meanwhile. */
  portTaken(): boolean {
    return this.#members.some((m) => /address already in use/i.test(this.logTail(m)));
  }

  logTail(m: Member): string {
    try {
      const text = readFileSync(m.logFile, 'utf8');
      return text.slice(-logTailBytes);
    } catch {
      return '';
    }
  }

  describe(what: string): string {
    const parts = [`${this.kind} cluster: ${what}`];
    for (const m of this.#members) {
      const state = m.child && running(m.child) ? `running pid ${m.child.pid}` : 'not running';
      parts.push(`--- ${m.name} ${m.clientUrl} (${state}), log tail:`, this.logTail(m));
    }
    return parts.join('\n');
  }

  /**
   * SIGTERM each member by PID, SIGKILL after a bound, wait for the exits, remove the data. One
   * member at a time: an etcd leader given SIGTERM hands leadership to a follower first, which
   * needs the followers still up.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const m of this.#members) if (m.child !== undefined) await stopProcess(m.child);
    removeDir(this.#root);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

function memberEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // ETCD_* variables in our environment would be read by etcd as flags; NODE_OPTIONS meant for
  // the bench process must not reach the members.
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('ETCD') && k !== 'NODE_OPTIONS') env[k] = v;
  }
  return env;
}

function memberArgs(
  kind: SystemKind,
  m: { name: string; clientUrl: string; peerUrl: string; dataDir: string },
  initialCluster: string,
  token: string,
): string[] {
  const args = [
    ...newMemberFlags(m, initialCluster, token),
    `--heartbeat-interval=${heartbeatIntervalMs}`,
    `--election-timeout=${electionTimeoutMs}`,
  ];
  // zap to stderr: capnslog is deprecated in 3.4 and would print a warning per start.
  if (kind === 'etcd') args.push('--logger=zap', '--log-outputs=stderr');
  return args;
}

async function startOnce(options: ClusterOptions): Promise<Cluster> {
  const ports = await freePorts(members * 2);
  const root = mkdtempSync(join(tmpdir(), `tenure-bench-${options.kind}-`));
  trackDir(root);
  const token = `bench-${randomBytes(6).toString('hex')}`;
  const specs = Array.from({ length: members }, (_, i) => ({
    name: `n${i + 1}`,
    clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
    peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
    dataDir: join(root, `n${i + 1}`),
    logFile: join(root, `n${i + 1}.log`),
  }));
  const initialCluster = specs.map((s) => `${s.name}=${s.peerUrl}`).join(',');
  const ms: Member[] = specs.map((s) => ({
    name: s.name,
    clientUrl: s.clientUrl,
    dataDir: s.dataDir,
    logFile: s.logFile,
    args: memberArgs(options.kind, s, initialCluster, token),
    child: undefined,
  }));
  const cluster = new Cluster(options.kind, root, ms, memberEnv(), options.memberNodeArgs ?? []);
  cluster.spawnAll();
  return cluster;
}

/**
 * Start a 3-member cluster and wait until all members agree on a leader. On failure every
 * process is stopped and the data removed before the error is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  if (options.kind === 'etcd') findEtcd();
  for (let attempt = 1; ; attempt++) {
    const cluster = await startOnce(options);
    try {
      await cluster.waitReady();
      return cluster;
    } catch (e) {
      const retry = cluster.portTaken() && attempt < portAttemptsMax;
      await cluster.stop();
      if (!retry) throw e;
    }
  }
}
