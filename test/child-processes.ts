// Every child process a test starts is stopped by that test, by PID; this is the backstop for a
// test process that ends early. 'exit' handlers run on a normal exit and on process.exit, but not
// when a signal ends the process: node's runner ends a file that outlives --test-timeout with
// SIGTERM (scripts/test.mjs), and ^C sends SIGINT. Both become process.exit here, and on exit
// every registered child still running is SIGKILLed (then SIGCONTed, in case a test stopped it).
import type { ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();

/** Register `child` to be killed if this process exits while it still runs; returns it. */
export function killOnExit<T extends ChildProcess>(child: T): T {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function killLive(): void {
  for (const child of live) {
    const pid = child.pid;
    if (pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(pid, 'SIGKILL');
      process.kill(pid, 'SIGCONT');
    } catch {
      // Already gone.
    }
  }
}

process.on('exit', killLive);
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => process.exit(code));
}
