// Shared helpers for integration tests: the repository root and running `bin/tenure` as a child
// process that the test stops by PID if it outlives its budget.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { track } from '../src/launcher/processes.js';

export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('repository root (package.json) not found');
    dir = up;
  }
  return dir;
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunCliOptions {
  readonly env?: NodeJS.ProcessEnv;
  /**
   * What ends a run over budget; default SIGKILL. SIGINT lets a command that starts clusters
   * (bench) stop them itself.
   */
  readonly killSignal?: NodeJS.Signals;
}

/** Run `bin/tenure ARGS`; signal it by PID if it is still running after `budgetMs`. */
export function runCli(
  args: readonly string[],
  budgetMs: number,
  opts: RunCliOptions = {},
): Promise<CliResult> {
  const root = repoRoot();
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(process.execPath, [join(root, 'bin/tenure'), ...args], {
        cwd: root,
        ...(opts.env !== undefined ? { env: opts.env } : {}),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(child.pid, opts.killSignal ?? 'SIGKILL');
    }, budgetMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
