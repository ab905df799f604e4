// The demo process's handle on one worker child process (worker.ts): start it with an IPC channel,
// take its messages in order with a bound on each wait, freeze and resume it by PID (SIGSTOP,
// SIGCONT), and stop it by PID — politely first, SIGKILL after a bound.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HostMessage, WorkerConfig, WorkerMessage } from './protocol.js';

// Named limits.
/** Worker output kept for an error message. */
const outputCharsMax = 4_000;
/** After `release`, how long a worker may take to exit before SIGKILL. */
const exitGraceMs = 5_000;

const workerPath = fileURLToPath(new URL('./worker.js', import.meta.url));

export class WorkerExitedError extends Error {
  override readonly name = 'WorkerExitedError';
  readonly code = 'DEMO_WORKER_EXITED';
}

/** The signal's reason if it is an Error, else an Error saying the wait was aborted. */
function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error(`aborted: ${String(reason)}`);
}

export class DemoWorker {
  readonly name: string;
  readonly pid: number;
  readonly #child: ChildProcess;
  readonly #inbox: WorkerMessage[] = [];
  #waiter: ((m: WorkerMessage | undefined) => void) | undefined;
  #output = '';
  #exitCode: number | null | undefined;
  readonly #exited: Promise<void>;
  #frozen = false;
  #released = false;

  private constructor(name: string, child: ChildProcess, pid: number) {
    this.name = name;
    this.#child = child;
    this.pid = pid;
    const keep = (b: Buffer): void => {
      this.#output = (this.#output + b.toString()).slice(-outputCharsMax);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (m: WorkerMessage) => {
      const w = this.#waiter;
      this.#waiter = undefined;
      if (w === undefined) this.#inbox.push(m);
      else w(m);
    });
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.#exitCode = code ?? (signal === null ? null : -1);
        const w = this.#waiter;
        this.#waiter = undefined;
        w?.(undefined);
        resolve();
      }),
    );
  }

  static start(config: WorkerConfig): DemoWorker {
    const child = fork(workerPath, [JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    if (child.pid === undefined) throw new WorkerExitedError(`${config.name}: could not start`);
    return new DemoWorker(config.name, child, child.pid);
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  send(message: HostMessage): void {
    if (message.type === 'release') this.#released = true;
    this.#child.send(message);
  }

  /**
   * The next message, which must be of `type`; rejects if the worker exits, reports a failure,
   * sends something else, or says nothing within `timeoutMs` (or `signal` aborts).
   */
  async expect<T extends WorkerMessage['type']>(
    type: T,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Extract<WorkerMessage, { type: T }>> {
    const m = await this.#next(timeoutMs, signal);
    if (m.type === 'failed') throw new WorkerExitedError(`${this.name} failed: ${m.message}`);
    if (m.type !== type) throw new Error(`${this.name}: expected ${type}, got ${m.type}`);
    return m as Extract<WorkerMessage, { type: T }>;
  }

  /** Take the next message, whatever its type; as `expect` otherwise. */
  async next(timeoutMs: number, signal?: AbortSignal): Promise<WorkerMessage> {
    const m = await this.#next(timeoutMs, signal);
    if (m.type === 'failed') throw new WorkerExitedError(`${this.name} failed: ${m.message}`);
    return m;
  }

  #next(timeoutMs: number, signal?: AbortSignal): Promise<WorkerMessage> {
    const queued = this.#inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#exitCode !== undefined) return Promise.reject(this.#exitError());
    if (signal?.aborted === true) return Promise.reject(abortError(signal));
    if (this.#waiter !== undefined) {
      return Promise.reject(new Error(`${this.name}: one reader at a time`));
    }
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiter = undefined;
      };
      const onAbort = (): void => {
        done();
        reject(abortError(signal));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${this.name}: no message within ${timeoutMs} ms\n${this.#output}`));
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiter = (m) => {
        done();
        if (m === undefined) reject(this.#exitError());
        else resolve(m);
      };
    });
  }

  #exitError(): WorkerExitedError {
    return new WorkerExitedError(
      `${this.name} (pid ${this.pid}) exited with ${this.#exitCode}\n${this.#output}`,
    );
  }

  /** SIGSTOP by PID: the process stops between two instructions, as in a long GC pause. */
  freeze(): void {
    process.kill(this.pid, 'SIGSTOP');
    this.#frozen = true;
  }

  /** SIGCONT by PID. */
  resume(): void {
    process.kill(this.pid, 'SIGCONT');
    this.#frozen = false;
  }

  /**
   * Make sure the process is gone: resume it if frozen; if it was not told to release (the
   * scenario failed or was interrupted), SIGTERM it by PID; wait up to `graceMs` for it to exit,
   * then SIGKILL it by PID and wait for the exit. Idempotent.
   */
  async stop(graceMs = exitGraceMs): Promise<void> {
    if (this.#exitCode !== undefined) return;
    if (this.#frozen) this.resume();
    if (!this.#released) process.kill(this.pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), graceMs);
    });
    const late = await Promise.race([this.#exited.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late && this.#exitCode === undefined) {
      process.kill(this.pid, 'SIGKILL');
      await this.#exited;
    }
  }
}
