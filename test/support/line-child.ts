// A long-running child whose stdout is read as lines (JSON lines, with `records`): waits on its
// output are bounded and fail with what it printed; it is stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { onLines } from '../../src/launcher/lines.js';
import { running, stopProcess, track } from '../../src/launcher/processes.js';
import { Wakeups } from './poll.js';

export interface LineChildOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed; without it stdin stays open for `write`. */
  readonly stdin?: string;
  /** Called with each stdout line as it arrives. */
  readonly onLine?: (line: string) => void;
}

export class LineChild {
  /** Every complete stdout line so far. */
  readonly lines: string[] = [];
  readonly #child: ChildProcess;
  readonly #what: string;
  #stderr = '';
  readonly #wakeups = new Wakeups();
  readonly #exited: Promise<number | null>;
  #records: unknown[] = [];
  #parsed = 0;

  constructor(file: string, args: readonly string[], options: LineChildOptions = {}) {
    this.#what = file.split('/').pop() ?? file;
    this.#child = track(
      spawn(file, args, {
        ...(options.env === undefined ? {} : { env: options.env }),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    // A line sent after the child died must not end this test process with EPIPE.
    this.#child.stdin?.on('error', () => undefined);
    if (options.stdin !== undefined) this.#child.stdin?.end(options.stdin);
    onLines(this.#child.stdout, (line) => {
      this.lines.push(line);
      options.onLine?.(line);
      this.#wake();
    });
    this.#child.stderr?.on('data', (b: Buffer) => (this.#stderr += b.toString()));
    this.#exited = new Promise((resolve) => {
      this.#child.on('error', () => {
        this.#wake();
        resolve(null);
      });
      this.#child.on('close', (code) => {
        this.#wake();
        resolve(code);
      });
    });
  }

  #wake(): void {
    this.#wakeups.wake();
  }

  get pid(): number {
    const pid = this.#child.pid;
    if (pid === undefined) throw new Error(`${this.#what} did not start`);
    return pid;
  }

  get running(): boolean {
    return running(this.#child);
  }

  get stderr(): string {
    return this.#stderr;
  }

  get exitCode(): number | null {
    return this.#child.exitCode;
  }

  get signalCode(): NodeJS.Signals | null {
    return this.#child.signalCode;
  }

  /** The non-blank stdout lines parsed as JSON. */
  records<T>(): T[] {
    for (; this.#parsed < this.lines.length; this.#parsed++) {
      const line = this.lines[this.#parsed] ?? '';
      if (line.trim() !== '') this.#records.push(JSON.parse(line));
    }
    return this.#records as T[];
  }

  /** Send a line to the child's stdin. */
  write(line: string): void {
    this.#child.stdin?.write(`${line}\n`);
  }

  /**
   * Resolves with `pick`'s first defined answer, asked on every line; rejects if the child exits
   * first or `timeoutMs` passes (a bound on a hang), quoting its output.
   */
  waitFor<T>(what: string, pick: () => T | undefined, timeoutMs: number): Promise<T> {
    return this.#wakeups.wait(
      () => {
        const v = pick();
        if (v !== undefined) return { done: v };
        if (!this.running) return { fail: new Error(this.describe(`exited before ${what}`)) };
        return undefined;
      },
      timeoutMs,
      () => new Error(this.describe(`gave no ${what} in ${timeoutMs} ms`)),
    );
  }

  /** Send `signal` by PID and wait for the exit; SIGKILL if it outlives `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<number | null> {
    await stopProcess(this.#child, graceMs, signal);
    return this.#exited;
  }

  /** The exit code once the process ends by itself. */
  exited(): Promise<number | null> {
    return this.#exited;
  }

  /** `what`, with the child's PID, state and output. */
  describe(what: string): string {
    const how = this.running
      ? 'still running'
      : `exited (code ${this.#child.exitCode}, signal ${this.#child.signalCode})`;
    return (
      `${this.#what} (pid ${this.#child.pid}) ${what}; ${how}; stdout:\n${this.lines.join('\n')}` +
      `\nstderr:\n${this.#stderr}`
    );
  }
}
