// The chaos run's own network and PID namespaces. `tenure chaos` starts itself again under
// `unshare --net --pid --fork --kill-child` (util-linux unshare(1)); the copy inside is PID 1 of
// the new PID namespace, so when it ends the kernel kills every process left in it
// (pid_namespaces(7): "If the init process of a PID namespace terminates, the kernel terminates
// all of the processes in the namespace via a SIGKILL signal"), and --kill-child ends it if the
// outer process dies first. The network namespace has only a loopback device, down until we set
// it up: its 127.0.0.0/8 route lets each member listen on an address of its own (127.0.0.1, .2,
// …), nothing can reach or leave the namespace, and its iptables rules vanish with it.
import { execFileSync, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { ChaosError } from './errors.js';

/** Set in the environment of the copy that runs inside the namespaces. */
export const INSIDE_ENV = 'TENURE_CHAOS_INSIDE';

export function insideNamespace(): boolean {
  return process.env[INSIDE_ENV] === '1';
}

/**
 * Run `argv` (this process's own command line) again inside fresh namespaces, its stdio ours, and
 * resolve with its exit code. A signal to us reaches it: Ctrl-C goes to the terminal's whole
 * process group, and SIGTERM is passed on by PID.
 */
export function relaunchInNamespace(argv: readonly string[]): Promise<number> {
  if (process.getuid?.() !== 0)
    throw new ChaosError(
      'SETUP',
      'tenure chaos needs root: it makes network and PID namespaces and iptables rules',
    );
  return new Promise((resolve, reject) => {
    const child = spawn(
      'unshare',
      ['--net', '--pid', '--fork', '--kill-child', process.execPath, ...argv],
      { stdio: 'inherit', env: { ...process.env, [INSIDE_ENV]: '1' } },
    );
    const forward = (): void => {
      if (child.pid !== undefined) child.kill('SIGTERM');
    };
    process.on('SIGTERM', forward);
    child.on('error', (e) => {
      process.off('SIGTERM', forward);
      reject(new ChaosError('SETUP', `could not run unshare: ${e.message}`, { cause: e }));
    });
    child.on('exit', (code, signal) => {
      process.off('SIGTERM', forward);
      resolve(code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
    });
  });
}

/** Inside: bring loopback up and check that iptables works here. */
export function prepareNamespace(): void {
  try {
    execFileSync('ip', ['link', 'set', 'lo', 'up'], { stdio: 'pipe' });
    execFileSync('iptables', ['-F', 'OUTPUT'], { stdio: 'pipe' });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new ChaosError('SETUP', `the namespace could not be set up (ip, iptables): ${why}`);
  }
}
