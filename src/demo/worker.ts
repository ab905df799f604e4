// A demo worker, run as a child process by the split-brain demo (worker-process.ts forks it with
// an IPC channel). It takes the lock, then writes its record one part at a time through the store
// that the demo process hosts, and holds the lock until told to release it.
//
// It is deliberately the worker that fencing exists for: it does NOT check its session or the
// grant's signal before a write. A process frozen by a GC pause, a VM migration or SIGSTOP resumes
// in the middle of what it had already decided to do, and writes. To show that tenure's SDK would
// have told it, each write request carries what `grant.signal.aborted` and `session.valid()` said
// at that moment — read, reported, and ignored. It also carries on after a refused part, so that
// each of its steps meets the fence on its own; real code stops at the first StaleTokenError.
import { connect, Lock, type LockGrant, type RecipeTraceEvent } from '../client/index.js';
import type { HostMessage, WorkerConfig, WorkerMessage } from './protocol.js';

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;

function send(message: WorkerMessage): void {
  process.send?.(message);
}

/** Incoming host messages, in order, for `next()` to take. */
const inbox: HostMessage[] = [];
const waiting: Array<(m: HostMessage) => void> = [];
process.on('message', (m: HostMessage) => {
  const w = waiting.shift();
  if (w === undefined) inbox.push(m);
  else w(m);
});
// The demo process is gone (crashed or killed): nobody will direct us, so stop.
process.on('disconnect', () => process.exit(3));

function next(): Promise<HostMessage> {
  const m = inbox.shift();
  if (m !== undefined) return Promise.resolve(m);
  return new Promise((resolve) => waiting.push(resolve));
}

async function expect<T extends HostMessage['type']>(
  type: T,
): Promise<Extract<HostMessage, { type: T }>> {
  const m = await next();
  if (m.type !== type) throw new Error(`${config.name}: expected ${type}, got ${m.type}`);
  return m as Extract<HostMessage, { type: T }>;
}

function onTrace(e: RecipeTraceEvent): void {
  if (e.type === 'queued') send({ type: 'queued', token: e.token.toString() });
  if (e.type === 'watch-predecessor') {
    send({ type: 'queued', token: e.token.toString(), predecessor: e.predecessor });
  }
}

async function main(): Promise<void> {
  const client = await connect({ endpoints: config.endpoints });
  try {
    const session = await client.session({ ttlSeconds: config.ttlSeconds });
    const lock = new Lock(client, session, config.lockName, { trace: onTrace });
    const grant: LockGrant = await lock.acquire({ timeoutMs: config.acquireTimeoutMs });
    send({ type: 'granted', token: grant.token.toString(), ttlSeconds: session.ttlSeconds });
    for (let part = 1; part <= config.parts; part++) {
      // Observed, reported, and deliberately not acted upon (see the header).
      const observed = { signalAborted: grant.signal.aborted, sessionValid: session.valid() };
      send({ type: 'write', part, token: grant.token.toString(), observed });
      await expect('write-result');
    }
    send({ type: 'wrote-all' });
    await expect('release');
    await grant.release().catch(() => false);
    await session.close().catch(() => undefined);
  } finally {
    await client.close();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    send({ type: 'failed', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
    process.exitCode = 1;
    // Let the IPC message drain before exiting.
    setTimeout(() => process.exit(1), 100);
  },
);
