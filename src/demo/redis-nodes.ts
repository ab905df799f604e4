// The Redlock demo's five Redis servers: Debian's redis-server, each on a free 127.0.0.1 port with
// its own directory, no persistence (`--save ''`, `--appendonly no`: a restart comes back empty,
// which is Redis's default between snapshots and what the restart scenario is about), and its wall
// clock under the demo's control through wall-clock-shim.ts. Started, killed -9, restarted on the
// same port and stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, renameSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { sleep } from '../launcher/poll.js';
import { freePorts } from '../launcher/ports.js';
import { exited, running, stopProcess } from '../launcher/processes.js';
import { DemoSetupError } from './redis-errors.js';
import { offsetFileEnv } from './wall-clock-shim.js';

export const redisServerPath = '/usr/bin/redis-server';

// Named limits.
/** A hang guard for a server to answer PING after its start. */
const readyTimeoutMs = 15_000;
/** Pause between PING attempts while a server starts. */
const readyPollMs = 50;
/** A hang guard for one PING. */
const pingTimeoutMs = 2_000;

/** Throw a DemoSetupError naming the Debian package if redis-server is not installed. */
export function requireRedisServer(): void {
  if (!existsSync(redisServerPath)) {
    throw new DemoSetupError(
      `the Redlock demo needs ${redisServerPath} from Debian's redis-server package: ` +
        'apt-get install -y redis-server',
    );
  }
}

interface Node {
  readonly port: number;
  readonly dir: string;
  readonly offsetFile: string;
  child: ChildProcess | undefined;
}

/** One PING over a fresh connection: true on +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const timer = setTimeout(() => finish(false), pingTimeoutMs);
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (b: Buffer) => finish(b.toString().startsWith('+PONG')));
    socket.on('error', () => finish(false));
  });
}

export class RedisNodes {
  readonly #nodes: Node[];
  readonly #shim: string;

  private constructor(nodes: Node[], shim: string) {
    this.#nodes = nodes;
    this.#shim = shim;
  }

  /** Start `count` servers under `dir` with the wall clock shim at `shim`; all answer PING. */
  static async start(count: number, dir: string, shim: string, signal?: AbortSignal) {
    requireRedisServer();
    const ports = await freePorts(count);
    const nodes = ports.map((port, i) => {
      const d = join(dir, `redis-${i + 1}`);
      mkdirSync(d, { recursive: true });
      const offsetFile = join(d, 'clock-offset-ms');
      writeFileSync(offsetFile, '0\n');
      return { port, dir: d, offsetFile, child: undefined };
    });
    const r = new RedisNodes(nodes, shim);
    try {
      for (let i = 0; i < count; i++) r.#spawn(i);
      await Promise.all(nodes.map((_, i) => r.#waitReady(i, signal)));
    } catch (e) {
      await r.stop();
      throw e;
    }
    return r;
  }

  get size(): number {
    return this.#nodes.length;
  }
  get ports(): readonly number[] {
    return this.#nodes.map((n) => n.port);
  }
  get pids(): ReadonlyArray<number | undefined> {
    return this.#nodes.map((n) =>
      n.child !== undefined && running(n.child) ? n.child.pid : undefined,
    );
  }

  #node(i: number): Node {
    const n = this.#nodes[i];
    if (n === undefined) throw new RangeError(`no Redis node ${i}`);
    return n;
  }

  #spawn(i: number): void {
    const n = this.#node(i);
    const log = openSync(join(n.dir, 'redis.log'), 'a');
    try {
      const args = ['--port', String(n.port), '--bind', '127.0.0.1', '--dir', n.dir];
      args.push('--save', '', '--appendonly', 'no', '--protected-mode', 'no');
      n.child = spawn(redisServerPath, args, {
        stdio: ['ignore', log, log],
        env: { ...process.env, LD_PRELOAD: this.#shim, [offsetFileEnv]: n.offsetFile },
      });
    } finally {
      closeSync(log);
    }
  }

  async #waitReady(i: number, signal?: AbortSignal): Promise<void> {
    const n = this.#node(i);
    const deadline = performance.now() + readyTimeoutMs;
    for (;;) {
      if (n.child === undefined || !running(n.child)) {
        throw new Error(`redis-server ${i + 1} on port ${n.port} exited (see ${n.dir}/redis.log)`);
      }
      if (await ping(n.port)) return;
      if (performance.now() > deadline) {
        throw new Error(`redis-server ${i + 1} on port ${n.port} did not answer PING`);
      }
      await sleep(readyPollMs, signal);
    }
  }

  /** kill -9 node i by PID and wait for its exit: whatever it held in memory is gone. */
  async kill9(i: number): Promise<void> {
    const n = this.#node(i);
    if (n.child !== undefined && running(n.child)) await stopProcess(n.child, 0, 'SIGKILL');
  }

  /** Start node i again on the same port and directory; resolves once it answers PING. */
  async restart(i: number, signal?: AbortSignal): Promise<void> {
    const n = this.#node(i);
    if (n.child !== undefined) await exited(n.child);
    this.#spawn(i);
    await this.#waitReady(i, signal);
  }

  /** Set node i's wall clock offset (ms); the shim reads it at every clock call. */
  setClockOffsetMs(i: number, offsetMs: number): void {
    const n = this.#node(i);
    // Atomic: the shim opens the file at every call and must never read it half-written.
    const temp = `${n.offsetFile}.tmp`;
    writeFileSync(temp, `${Math.round(offsetMs)}\n`);
    renameSync(temp, n.offsetFile);
  }

  /** Stop every server by PID (SIGTERM, SIGKILL after a grace). */
  async stop(): Promise<void> {
    await Promise.all(
      this.#nodes.map((n) => (n.child === undefined ? Promise.resolve() : stopProcess(n.child))),
    );
  }
}
