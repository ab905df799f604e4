// Running a child process to completion: its exit code and output, stopped by PID if it outlives
// its budget. `bin/tenure`, etcdctl and the other one-shot commands of the tests run here.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { signalPid, track } from '../../src/launcher/processes.js';
import { repoRoot } from './paths.js';

export interface ChildResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunChildOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Written to the child's stdin, which is then closed; without it stdin is closed at once. */
  readonly stdin?: string;
  /**
   * What ends a run over budget; default SIGKILL. SIGINT lets a command that starts clusters
   * (bench) stop them itself.
   */
  readonly killSignal?: NodeJS.Signals;
}

/** Run `file ARGS`; signal it by PID if it is still running after `budgetMs`. */
export function runChild(
  file: string,
  args: readonly string[],
  budgetMs: number,
  opts: RunChildOptions = {},
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(file, args, {
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.env !== undefined ? { env: opts.env } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      if (child.pid !== undefined && child.exitCode === null)
        signalPid(child.pid, opts.killSignal ?? 'SIGKILL');
    }, budgetMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A child that exits without reading its stdin must not end this process with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin ?? '');
  });
}

export type CliResult = ChildResult;
export type RunCliOptions = Pick<RunChildOptions, 'env' | 'killSignal'>;

/** Run `bin/tenure ARGS` from the repository root; signal it by PID past `budgetMs`. */
export function runCli(
  args: readonly string[],
  budgetMs: number,
  opts: RunCliOptions = {},
): Promise<CliResult> {
  const root = repoRoot();
  return runChild(process.execPath, [join(root, 'bin/tenure'), ...args], budgetMs, {
    cwd: root,
    ...opts,
  });
}
