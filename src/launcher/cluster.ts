// A cluster of etcd or tenure members on 127.0.0.1, each a child process started by the same
// command line, with one readiness check, logs in files or in memory, and every process stopped
// by the PID we spawned. `tenure up`, the bench, the demo and the tests all start theirs here.
//
//   await using cluster = await startCluster({ kind: 'tenure', size: 3 });
//   ... cluster.endpoints ...
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LaunchError } from './errors.js';
import {
  findEtcd,
  memberCommand,
  memberEnv,
  tlsFlags,
  type MemberCommandOptions,
  type MemberKind,
  type MemberTls,
} from './member-command.js';
import { memberLog, type LogMode, type MemberLog } from './member-log.js';
import { pollFor, PollTimeoutError } from './poll.js';
import { freePorts, portFree } from './ports.js';
import { exited, removeDir, running, stopProcess, track, trackDir } from './processes.js';
import {
  agreedLeader,
  describeProbes,
  memberReady,
  probeMember,
  type MemberProbe,
  type ProbeTls,
} from './readiness.js';

export interface ClusterOptions {
  readonly kind: MemberKind;
  readonly size: number;
  /**
   * Keep data and logs in this directory, and leave them there at stop (`tenure up`). Default: a
   * fresh temporary directory, removed at stop.
   */
  readonly dir?: string;
  /** Where the temporary directory goes; default os.tmpdir(). */
  readonly tmpRoot?: string;
  /**
   * Client and peer port of each member, refused at once if one is taken. Default: ports the OS
   * chose, and fresh ones if a member lost its port to another process meanwhile.
   */
  readonly ports?: { readonly client: readonly number[]; readonly peer: readonly number[] };
  /**
   * Member i's address, for its client and peer URLs; default 127.0.0.1. Members on addresses
   * of their own (127.0.0.1, .2, … inside a network namespace: `tenure chaos`) may share ports,
   * and a firewall rule that names an address then names one member.
   */
  readonly host?: (i: number) => string;
  /** Member i's name; default n1, n2, … */
  readonly memberName?: (i: number) => string;
  /** The cluster token; default a random one. */
  readonly token?: string;
  /** Timing, extra flags and node arguments of the members' command line. */
  readonly command?: MemberCommandOptions;
  /**
   * https:// client and/or peer URLs with these certificates (etcd's TLS flags). The readiness
   * probe asks https:// members with `probe` (the CA and a client certificate).
   */
  readonly tls?: MemberTls & { readonly probe?: ProbeTls };
  /** Extra environment for every member. */
  readonly env?: Readonly<Record<string, string>>;
  /** Let NODE_OPTIONS through to the members (the tests'); by default it stays with us. */
  readonly keepNodeOptions?: boolean;
  /** Member output to DIR/NAME.log ('file', the default) or the last lines in memory ('ring'). */
  readonly logs?: LogMode;
  /** Members in a session of their own that outlive this process (`tenure up --detach`). */
  readonly detached?: boolean;
  /**
   * Stop the members if this process ends first (default). `tenure up` says no: its members
   * either outlive it on purpose or are stopped by its own Ctrl-C handler, by the PIDs it records.
   */
  readonly tracked?: boolean;
  /** Wait this long for the cluster to be ready (ms); 0: return once spawned. Default 30 000. */
  readonly readyTimeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Called with the members ready so far, on every readiness round of the first wait. */
  readonly onProgress?: (ready: number, of: number) => void;
  /** Called once the members of an attempt are spawned. */
  readonly onSpawned?: (cluster: Cluster, attempt: number) => void;
  /** Called when an attempt failed on a port taken meanwhile and another follows. */
  readonly onRetry?: (error: unknown, attempt: number) => void;
}

export interface WaitReadyOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (ready: number, of: number) => void;
}

// Named limits.
const readyTimeoutMsDefault = 30_000;
/** Pause between readiness rounds. */
const readyPollIntervalMs = 100;
/** Attempts with fresh ports when a port was taken between our probe and the member's bind. */
const portAttemptsMax = 3;
/** Lines of each member's log quoted when the cluster fails. */
const failureTailLines = 15;

const terminating = new Set<NodeJS.Signals>(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGHUP']);

interface Member {
  readonly name: string;
  readonly clientUrl: string;
  /** Where it listens for peers; a restart may move it (after MemberUpdate). */
  peerUrl: string;
  readonly dataDir: string;
  readonly logFile: string;
  readonly file: string;
  /** The command line; a fresh restart switches it to join an existing cluster, for good. */
  args: readonly string[];
  readonly log: MemberLog;
  child: ChildProcess | undefined;
  /** Stopped on purpose by kill(); waitReady does not expect it to answer. */
  down: boolean;
}

export class Cluster {
  readonly kind: MemberKind;
  /** Where the members' data and logs are. */
  readonly dir: string;
  readonly #members: Member[];
  readonly #env: NodeJS.ProcessEnv;
  readonly #detached: boolean;
  readonly #tracked: boolean;
  /** The directory is ours (temporary) and goes at stop. */
  readonly #ownsDir: boolean;
  readonly #probeTls: ProbeTls | undefined;
  /** What a member added later is started with: the cluster's command line and log mode. */
  readonly #joiner: Joiner | undefined;
  #stopped = false;

  constructor(
    kind: MemberKind,
    dir: string,
    ownsDir: boolean,
    members: Member[],
    env: NodeJS.ProcessEnv,
    options: { detached: boolean; tracked: boolean; probeTls?: ProbeTls; joiner?: Joiner },
  ) {
    this.kind = kind;
    this.dir = dir;
    this.#ownsDir = ownsDir;
    this.#members = members;
    this.#env = env;
    this.#detached = options.detached;
    this.#tracked = options.tracked;
    this.#probeTls = options.probeTls;
    this.#joiner = options.joiner;
    for (let i = 0; i < members.length; i++) this.#spawn(i);
  }

  get size(): number {
    return this.#members.length;
  }
  get names(): readonly string[] {
    return this.#members.map((m) => m.name);
  }
  /** Client URLs, http(s)://HOST:PORT (HOST 127.0.0.1 unless `host` says), by member index. */
  get endpoints(): readonly string[] {
    return this.#members.map((m) => m.clientUrl);
  }
  get peerUrls(): readonly string[] {
    return this.#members.map((m) => m.peerUrl);
  }
  get dataDirs(): readonly string[] {
    return this.#members.map((m) => m.dataDir);
  }
  /** Each member's log file (with `logs: 'file'`). */
  get logFiles(): readonly string[] {
    return this.#members.map((m) => m.logFile);
  }
  /** Current PIDs by member index; undefined for a member that is not running. */
  get pids(): ReadonlyArray<number | undefined> {
    return this.#members.map((m) => (this.#running(m) ? m.child?.pid : undefined));
  }

  #member(i: number): Member {
    const m = this.#members[i];
    if (m === undefined) throw new RangeError(`no member ${i} in a cluster of ${this.size}`);
    return m;
  }

  #running(m: Member): boolean {
    return m.child !== undefined && running(m.child);
  }

  #spawn(i: number, env: Readonly<Record<string, string>> = {}): void {
    const m = this.#member(i);
    const stdio = m.log.stdio();
    let child: ChildProcess | undefined;
    try {
      const withExtra = { ...this.#env, ...env };
      child = spawn(m.file, m.args, { env: withExtra, stdio, detached: this.#detached });
    } finally {
      m.log.spawned(child);
    }
    if (this.#tracked) track(child);
    if (this.#detached) child.unref();
    m.child = child;
    child.on('error', (e) => m.log.note(`spawn failed: ${e.message}`));
    child.on('exit', (code, signal) => m.log.note(`exited with code ${code} signal ${signal}`));
  }

  /** Send `signal` to member i by PID; for terminating signals, wait until it has exited. */
  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.#member(i);
    const child = m.child;
    if (child?.pid === undefined || !running(child)) return;
    if (!terminating.has(signal)) {
      process.kill(child.pid, signal);
      return;
    }
    m.down = true;
    await stopProcess(child, undefined, signal);
  }

  /**
   * Member i will exit on its own (a fault made it: a failing disk); waitReady no longer expects
   * it to answer, as after kill(), until it is restarted.
   */
  expectExit(i: number): void {
    this.#member(i).down = true;
  }

  /**
   * Start member i again with the same flags and data directory (it must have exited); `env`
   * adds to the environment of this start only (a clock skewed by libfaketime, say).
   *
   * `fresh`: the member was removed from the cluster and added again (MemberAdd) under the same
   * peer URL, so it starts as a new member would: its data directory wiped, and
   * `--initial-cluster-state=existing`, so that it takes its configuration and data from the
   * leader instead of bootstrapping a cluster of its own (etcd's runtime reconfiguration
   * procedure). The flag stays for later restarts: the member was never one of the first.
   */
  async restart(
    i: number,
    env: Readonly<Record<string, string>> = {},
    options: { readonly fresh?: boolean; readonly peerUrl?: string } = {},
  ): Promise<void> {
    const m = this.#member(i);
    if (this.#stopped) throw new Error('cluster is stopped');
    if (this.#running(m)) throw new Error(`member ${i} (${m.name}) is still running`);
    if (m.child !== undefined) await exited(m.child);
    const extra = Object.keys(env);
    if (options.fresh === true) {
      removeDir(m.dataDir);
      m.args = m.args.map((a) =>
        a.startsWith('--initial-cluster-state=') ? '--initial-cluster-state=existing' : a,
      );
    }
    const peerUrl = options.peerUrl;
    if (peerUrl !== undefined) {
      // The member's peer URLs were changed (MemberUpdate): it listens and advertises there. Its
      // data dir holds its identity, so --initial-cluster is left as it was (etcd ignores it
      // once the data dir exists).
      m.args = m.args.map((a) =>
        a.startsWith('--listen-peer-urls=') || a.startsWith('--initial-advertise-peer-urls=')
          ? `${a.slice(0, a.indexOf('=') + 1)}${peerUrl}`
          : a,
      );
      m.peerUrl = peerUrl;
      m.log.note(`peer URL now ${peerUrl}`);
    }
    const what = options.fresh === true ? 'restart fresh (data wiped, joining)' : 'restart';
    m.log.note(extra.length === 0 ? what : `${what} with ${extra.join(', ')} set`);
    m.down = false;
    this.#spawn(i, env);
  }

  /**
   * Make room for a member that joins this cluster at run time: ports of its own, a data dir,
   * and the command line of a member joining an existing cluster (`--initial-cluster-state
   * =existing`, every member and it in `--initial-cluster`). It is not started: add it first
   * (`etcdctl member add NAME --peer-urls=<peerUrls[i]>`, with `--learner` or not), then start
   * it with restart(i). Returns its index.
   */
  async addMember(name: string): Promise<number> {
    const j = this.#joiner;
    if (j === undefined || this.#stopped) throw new Error('this cluster takes no new members');
    if (this.#members.some((m) => m.name === name)) throw new Error(`a member is named ${name}`);
    const [clientPort, peerPort] = await freePorts(2);
    const spec = {
      name,
      clientUrl: `${j.clientScheme}://${j.host}:${clientPort}`,
      peerUrl: `${j.peerScheme}://${j.host}:${peerPort}`,
      dataDir: join(this.dir, name),
      logFile: join(this.dir, `${name}.log`),
    };
    const initialCluster = [...this.#members, spec].map((m) => `${m.name}=${m.peerUrl}`).join(',');
    const { file, args } = memberCommand(this.kind, spec, initialCluster, j.token, j.command);
    this.#members.push({
      ...spec,
      file,
      args: args.map((a) =>
        a === '--initial-cluster-state=new' ? '--initial-cluster-state=existing' : a,
      ),
      log: memberLog(j.logs, spec.logFile),
      child: undefined,
      // Not running until restart(i): waitReady does not expect it.
      down: true,
    });
    return this.#members.length - 1;
  }

  /**
   * Wait until every member not stopped on purpose is ready (readiness.ts) and return the
   * leader's index. Throws a LaunchError, quoting each member's state and log, if a member exits
   * or `timeoutMs` passes.
   */
  async waitReady(
    timeoutMs = readyTimeoutMsDefault,
    options: WaitReadyOptions = {},
  ): Promise<number> {
    let last: MemberProbe[] = [];
    try {
      return await pollFor(
        `${this.kind} cluster ready`,
        async () => {
          const crashed = this.#members.filter((m) => !m.down && !this.#running(m));
          if (crashed.length > 0) {
            const names = crashed.map((m) => m.name).join(', ');
            throw new LaunchError(
              'MEMBER_EXITED',
              this.describe(`has exited member(s) ${names}`, last),
            );
          }
          const up = this.#members.filter((m) => !m.down);
          last = await Promise.all(
            up.map((m) => probeMember(m.clientUrl, options.signal, this.#probeTls)),
          );
          options.onProgress?.(last.filter(memberReady).length, up.length);
          const i = agreedLeader(last);
          return i === undefined ? undefined : this.#members.indexOf(up[i] as Member);
        },
        {
          timeoutMs,
          intervalMs: readyPollIntervalMs,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        },
      );
    } catch (e) {
      if (e instanceof PollTimeoutError)
        throw new LaunchError('NOT_READY', this.describe(`not ready after ${timeoutMs} ms`, last));
      throw e;
    }
  }

  /** The last lines of member i's output, the launcher's notes among them. */
  logTail(i: number, lines = 20): string {
    return this.#member(i).log.tail(lines);
  }

  /** True if some member exited because a port we picked was taken meanwhile. */
  portTaken(): boolean {
    return this.#members.some(
      (m, i) => !this.#running(m) && /address already in use/i.test(this.logTail(i, 400)),
    );
  }

  /** `what`, what each member said last, and each member's state and log tail. */
  describe(what: string, last: readonly MemberProbe[] = []): string {
    const parts = [`${this.kind} cluster of ${this.size} ${what}`];
    if (last.length > 0) parts.push('last readiness probe:', describeProbes(last));
    this.#members.forEach((m, i) => {
      const state = this.#running(m) ? `running pid ${m.child?.pid}` : 'not running';
      parts.push(`--- member ${i} ${m.name} ${m.clientUrl} (${state}), last output:`);
      parts.push(this.logTail(i, failureTailLines));
    });
    return parts.join('\n');
  }

  /**
   * SIGTERM each member by PID, SIGKILL after a bound, wait for the exits, remove a temporary
   * directory. One member at a time: an etcd leader given SIGTERM first hands leadership to a
   * follower, which needs the followers still up; stopping all at once makes it wait it out.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const m of this.#members) if (m.child !== undefined) await stopProcess(m.child);
    if (this.#ownsDir) removeDir(this.dir);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/** How members added later (Cluster.addMember) are started. */
interface Joiner {
  readonly token: string;
  readonly command: MemberCommandOptions;
  readonly logs: LogMode;
  readonly host: string;
  readonly clientScheme: string;
  readonly peerScheme: string;
}

async function portsFor(options: ClusterOptions): Promise<{ client: number[]; peer: number[] }> {
  const fixed = options.ports;
  if (fixed === undefined) {
    const ports = await freePorts(options.size * 2);
    return {
      client: ports.filter((_, j) => j % 2 === 0),
      peer: ports.filter((_, j) => j % 2 === 1),
    };
  }
  if (fixed.client.length !== options.size || fixed.peer.length !== options.size)
    throw new RangeError(`${options.size} members need ${options.size} client and peer ports`);
  for (const port of [...fixed.client, ...fixed.peer]) {
    if (!(await portFree(port)))
      throw new LaunchError(
        'PORT_IN_USE',
        `port ${port} on 127.0.0.1 is in use (is an etcd or another tenure running?); free it or pass other ports`,
      );
  }
  return { client: [...fixed.client], peer: [...fixed.peer] };
}

async function spawnOnce(options: ClusterOptions): Promise<Cluster> {
  const ports = await portsFor(options);
  const ownsDir = options.dir === undefined;
  const dir =
    options.dir === undefined
      ? mkdtempSync(join(options.tmpRoot ?? tmpdir(), `tenure-${options.kind}-`))
      : resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  if (ownsDir) trackDir(dir);
  const token = options.token ?? `${options.kind}-${randomBytes(6).toString('hex')}`;
  const name = options.memberName ?? ((i: number) => `n${i + 1}`);
  const host = options.host ?? (() => '127.0.0.1');
  const clientScheme = options.tls?.client === undefined ? 'http' : 'https';
  const peerScheme = options.tls?.peer === undefined ? 'http' : 'https';
  const specs = Array.from({ length: options.size }, (_, i) => ({
    name: name(i),
    clientUrl: `${clientScheme}://${host(i)}:${ports.client[i]}`,
    peerUrl: `${peerScheme}://${host(i)}:${ports.peer[i]}`,
    dataDir: join(dir, name(i)),
    logFile: join(dir, `${name(i)}.log`),
  }));
  const initialCluster = specs.map((s) => `${s.name}=${s.peerUrl}`).join(',');
  const command: MemberCommandOptions = {
    ...options.command,
    extraArgs: [
      ...(options.tls === undefined ? [] : tlsFlags(options.tls)),
      ...(options.command?.extraArgs ?? []),
    ],
  };
  const members: Member[] = specs.map((s) => {
    const { file, args } = memberCommand(options.kind, s, initialCluster, token, command);
    return {
      ...s,
      file,
      args,
      log: memberLog(options.logs ?? 'file', s.logFile),
      child: undefined,
      down: false,
    };
  });
  return new Cluster(
    options.kind,
    dir,
    ownsDir,
    members,
    memberEnv(options.env, options.keepNodeOptions),
    {
      detached: options.detached === true,
      tracked: options.tracked !== false,
      ...(options.tls?.probe === undefined ? {} : { probeTls: options.tls.probe }),
      joiner: {
        token,
        command,
        logs: options.logs ?? 'file',
        host: host(options.size),
        clientScheme,
        peerScheme,
      },
    },
  );
}

/**
 * Start a cluster and (unless readyTimeoutMs is 0) wait until it is ready. On failure every
 * process is stopped and a temporary directory removed before the error is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  if (options.kind === 'etcd') findEtcd();
  const readyTimeoutMs = options.readyTimeoutMs ?? readyTimeoutMsDefault;
  for (let attempt = 1; ; attempt++) {
    const cluster = await spawnOnce(options);
    options.onSpawned?.(cluster, attempt);
    if (readyTimeoutMs === 0) return cluster;
    try {
      await cluster.waitReady(readyTimeoutMs, {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      });
      return cluster;
    } catch (e) {
      const retry = options.ports === undefined && cluster.portTaken() && attempt < portAttemptsMax;
      await cluster.stop();
      if (!retry) throw e;
      options.onRetry?.(e, attempt);
    }
  }
}
