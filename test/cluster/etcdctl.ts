// Debian's `etcdctl` (3.4) as a test client: one-shot commands that return their exit code and
// output, and long-running ones (watch, lock, elect) read line by line and stopped by PID.
import { LineChild } from '../support/line-child.js';
import { runChild, type ChildResult } from '../support/run-child.js';

export type EtcdctlResult = ChildResult;

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

function argv(endpoints: readonly string[], args: readonly string[]): string[] {
  return [`--endpoints=${endpoints.join(',')}`, ...args];
}

/** `ETCDCTL_API=3 etcdctl --endpoints=E ARGS`, run to completion. */
export function etcdctl(
  endpoints: readonly string[],
  args: readonly string[],
  options: EtcdctlOptions = {},
): Promise<EtcdctlResult> {
  return runChild('etcdctl', argv(endpoints, args), options.budgetMs ?? oneShotBudgetMsDefault, {
    env: childEnv(options.env),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

/** A long-running etcdctl whose stdout is read as lines; stopped by PID. */
export class EtcdctlProcess extends LineChild {
  constructor(endpoints: readonly string[], args: readonly string[], options: EtcdctlOptions = {}) {
    super('etcdctl', argv(endpoints, args), {
      env: childEnv(options.env),
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    });
  }

  /**
   * Resolves with all lines once at least `count` lines have arrived; rejects if the process
   * exits first or `timeoutMs` passes (a bound on a hang, not an assertion of speed).
   */
  waitForLines(count: number, timeoutMs: number): Promise<readonly string[]> {
    return this.waitFor(
      `${count} lines`,
      () => (this.lines.length >= count ? this.lines : undefined),
      timeoutMs,
    );
  }
}
