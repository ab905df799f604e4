// Debian's `etcdctl` (3.4) as a test client: one-shot commands that return their exit code and
// output, and long-running ones (watch, lock, elect) read line by line and stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { track } from '../../src/launcher/processes.js';

export interface EtcdctlResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface EtcdctlOptions {
  /** Extra environment for the child; ETCDCTL_API=3 is always set. */
  readonly env?: Readonly<Record<string, string>>;
  /** Written to the child's stdin, which is then closed (for `txn`). */
  readonly stdin?: string;
  /** The child is killed (SIGKILL, by PID) after this long; default 20 000 ms. */
  readonly budgetMs?: number;
}

/** How long a one-shot etcdctl may run before we kill it: well above its own 5 s command timeout. */
const oneShotBudgetMsDefault = 20_000;

function childEnv(extra: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // Inherited ETCDCTL_* settings (endpoints, certificates) would point the client elsewhere.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCDCTL_')) env[k] = v;
  return { ...env, ETCDCTL_API: '3', ...extra };
}

function spawnChild(
  endpoints: readonly string[],
  args: readonly string[],
  env: Readonly<Record<string, string>> | undefined,
): ChildProcess {
  const child = spawn('etcdctl', [`--endpoints=${endpoints.join(',')}`, ...args], {
    env: childEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return track(child);
}

/** `ETCDCTL_API=3 etcdctl --endpoints=E ARGS`, run to completion. */
export function etcdctl(
  endpoints: readonly string[],
  args: readonly string[],
  options: EtcdctlOptions = {},
): Promise<EtcdctlResult> {
  return new Promise((resolve, reject) => {
    const child = spawnChild(endpoints, args, options.env);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL');
    }, options.budgetMs ?? oneShotBudgetMsDefault);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.stdin ?? '');
  });
}

/** A long-running etcdctl whose stdout is read as lines; stopped by PID. */
export class EtcdctlProcess {
  readonly #child: ChildProcess;
  readonly #lines: string[] = [];
  #partial = '';
  #stderr = '';
  readonly #waiters = new Set<() => void>();
  readonly #exited: Promise<number | null>;

  constructor(endpoints: readonly string[], args: readonly string[], options: EtcdctlOptions = {}) {
    this.#child = spawnChild(endpoints, args, options.env);
    this.#child.stdout?.on('data', (b: Buffer) => {
      const parts = (this.#partial + b.toString()).split('\n');
      this.#partial = parts.pop() ?? '';
      this.#lines.push(...parts);
      for (const wake of [...this.#waiters]) wake();
    });
    this.#child.stderr?.on('data', (b: Buffer) => (this.#stderr += b.toString()));
    this.#child.stdin?.on('error', () => undefined);
    if (options.stdin !== undefined) this.#child.stdin?.end(options.stdin);
    this.#exited = new Promise((resolve) => {
      this.#child.on('error', () => resolve(null));
      this.#child.on('close', (code) => {
        for (const wake of [...this.#waiters]) wake();
        resolve(code);
      });
    });
  }

  get pid(): number {
    const pid = this.#child.pid;
    if (pid === undefined) throw new Error('etcdctl did not start');
    return pid;
  }

  /** Every complete stdout line so far. */
  get lines(): readonly string[] {
    return this.#lines;
  }

  get stderr(): string {
    return this.#stderr;
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /**
   * Resolves with all lines once at least `count` lines have arrived; rejects if the process
   * exits first or `timeoutMs` passes (a bound on a hang, not an assertion of speed).
   */
  waitForLines(count: number, timeoutMs: number): Promise<readonly string[]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.#lines.length >= count) {
          done();
          resolve(this.#lines);
        } else if (!this.running) {
          done();
          reject(new Error(this.#describe(`exited before printing ${count} lines`)));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(this.#describe(`printed fewer than ${count} lines in ${timeoutMs} ms`)));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** Send `signal` by PID and wait for the exit; SIGKILL if it outlives `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<number | null> {
    if (this.running) process.kill(this.pid, signal);
    let timer: NodeJS.Timeout | undefined;
    const escalate = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (this.running) process.kill(this.pid, 'SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.#exited, escalate]);
    const code = await this.#exited;
    clearTimeout(timer);
    return code;
  }

  /** The exit code once the process ends by itself. */
  exited(): Promise<number | null> {
    return this.#exited;
  }

  #describe(what: string): string {
    return `etcdctl (pid ${this.#child.pid}) ${what}; stdout:\n${this.#lines.join('\n')}\nstderr:\n${this.#stderr}`;
  }
}
