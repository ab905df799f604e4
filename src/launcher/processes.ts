// Every process a launcher starts (cluster members, the bench's electors, the tests' children)
// and every temporary directory it makes, so that nothing outlives the process that made them:
// on a normal exit, on an uncaught error and on Ctrl-C each process is stopped by its PID
// (SIGTERM, then SIGKILL after a bound) and the directories are removed. Processes are only ever
// signalled by the PID we spawned. node's test runner ends a file over its --test-timeout with
// SIGTERM, which skips 'exit' handlers unless, as here, the signal is turned into an exit.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { sleep } from './poll.js';

/** After SIGTERM, how long a process may take to exit before SIGKILL. */
export const stopGraceMsDefault = 5_000;
/** How often a process that is not our child is checked for its exit. */
const exitPollMs = 50;

const live = new Set<ChildProcess>();
/**
 * Whether a process with this PID exists: signal 0 probes without signalling. EPERM means it
 * exists but is not ours to signal.
 */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Every PID started, in order (reported in the result so that tests can check they are gone). */
const startedPids: number[] = [];
const dirs = new Set<string>();
let installed = false;

export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Resolves when `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (!running(child)) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
}

/** Register `child` to be stopped if this process ends while it runs; returns it. */
export function track<T extends ChildProcess>(child: T): T {
  install();
  live.add(child);
  if (child.pid !== undefined) startedPids.push(child.pid);
  const forget = (): void => void live.delete(child);
  child.once('exit', forget);
  child.once('error', forget);
  return child;
}

export function pidsStarted(): readonly number[] {
  return [...startedPids];
}

export function trackDir(dir: string): void {
  install();
  dirs.add(dir);
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** SIGTERM (or `signal`) `child` by PID; SIGKILL it if it has not exited after `graceMs`; wait for the exit. */
export async function stopProcess(
  child: ChildProcess,
  graceMs = stopGraceMsDefault,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || !running(child)) return;
  signalPid(pid, signal);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      if (running(child)) signalPid(pid, 'SIGKILL');
      resolve();
    }, graceMs);
  });
  await Promise.race([exited(child), bound]);
  await exited(child);
  clearTimeout(timer);
}

/**
 * Stop a process that is not our child (a member a detached `tenure up` left running) by PID:
 * `alive` says whether the PID is still that process. SIGTERM, then SIGKILL if it is still there
 * after `graceMs`; true if it needed the SIGKILL.
 */
export async function stopPid(
  pid: number,
  alive: (pid: number) => boolean,
  graceMs = stopGraceMsDefault,
): Promise<boolean> {
  if (!alive(pid)) return false;
  signalPid(pid, 'SIGTERM');
  const deadline = performance.now() + graceMs;
  while (alive(pid) && performance.now() < deadline) await sleep(exitPollMs);
  if (!alive(pid)) return false;
  signalPid(pid, 'SIGKILL');
  return true;
}

/** Stop every tracked process (all at once, each by PID) and remove every tracked directory. */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((c) => stopProcess(c)));
  for (const d of [...dirs]) removeDir(d);
}

function killAllNow(): void {
  for (const child of live) {
    if (child.pid !== undefined && running(child)) signalPid(child.pid, 'SIGKILL');
  }
  for (const d of [...dirs]) rmSync(d, { recursive: true, force: true });
}

function install(): void {
  if (installed) return;
  installed = true;
  // A synchronous last resort: 'exit' handlers cannot wait, so whatever is left is SIGKILLed.
  process.on('exit', killAllNow);
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping every child process this one started\n`);
      void stopAll().finally(() => process.exit(code));
    });
  }
}
