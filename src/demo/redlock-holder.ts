// Client A of the Redlock paused-holder scenario, run as a child process (redlock-scenarios.ts
// forks it with an IPC channel) so that the demo can freeze it with SIGSTOP as a long GC pause
// would. It takes the lock, checks that the lock is valid by Redlock's own measure
// (lock.expiration, which the library computes from Date.now()), reports that, and then — after
// however long it was frozen — writes as it had decided. On resume it also reports what a second
// check would have said, and ignores it: any check can be followed by a pause (Kleppmann 2016).
import { loadRedlock, newRedlock, redisClient } from './redlock-lib.js';

export interface HolderConfig {
  readonly ports: readonly number[];
  readonly key: string;
  readonly ttlMs: number;
}

/** Holder → demo. */
export type HolderMessage =
  | { readonly type: 'checked'; readonly validForMs: number; readonly votes: number }
  | { readonly type: 'write'; readonly validByOwnClock: boolean }
  | { readonly type: 'failed'; readonly message: string };

/** Demo → holder. */
export type HostOrder = { readonly type: 'go' } | { readonly type: 'exit' };

const config = JSON.parse(process.argv[2] ?? '{}') as HolderConfig;
const inbox: HostOrder[] = [];
const waiting: Array<(m: HostOrder) => void> = [];
process.on('message', (m: HostOrder) => {
  const w = waiting.shift();
  if (w === undefined) inbox.push(m);
  else w(m);
});
process.on('disconnect', () => process.exit(3));

function next(): Promise<HostOrder> {
  const m = inbox.shift();
  return m !== undefined ? Promise.resolve(m) : new Promise((resolve) => waiting.push(resolve));
}

function send(m: HolderMessage): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  const lib = await loadRedlock();
  const clients = config.ports.map((p) => redisClient(lib, p));
  try {
    const redlock = newRedlock(lib, clients);
    const lock = await redlock.acquire([config.key], config.ttlMs);
    const stats = await lock.attempts[lock.attempts.length - 1];
    send({
      type: 'checked',
      validForMs: lock.expiration - Date.now(),
      votes: stats?.votesFor.size ?? 0,
    });
    await next(); // 'go': sent while frozen, read after SIGCONT.
    send({ type: 'write', validByOwnClock: lock.expiration > Date.now() });
    await next(); // 'exit'
  } finally {
    clients.forEach((c) => c.disconnect());
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    send({ type: 'failed', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
    setTimeout(() => process.exit(1), 100);
  },
);
