// The Redlock client the demo runs: @sesamecare-oss/redlock (the maintained fork of node-redlock)
// over ioredis. Both are devDependencies, loaded only by `tenure demo redlock`, so that the rest of
// the CLI (and an installed tenure) does not need them.
import type { Redis as RedisClient } from 'ioredis';
import type { Redlock as RedlockClass } from '@sesamecare-oss/redlock';
import { DemoSetupError } from './redis-errors.js';

export type { RedisClient, RedlockClass };

export interface RedlockLibrary {
  readonly Redlock: typeof RedlockClass;
  readonly Redis: typeof RedisClient;
}

// Named limits.
/**
 * ioredis's bound on one command: a command to a node behind a cut link (a silent TcpRelay) fails
 * after this, and counts as that node's vote against.
 */
export const commandTimeoutMs = 400;

export async function loadRedlock(): Promise<RedlockLibrary> {
  try {
    const [redlock, ioredis] = await Promise.all([
      import('@sesamecare-oss/redlock'),
      import('ioredis'),
    ]);
    return { Redlock: redlock.Redlock, Redis: ioredis.Redis };
  } catch (e) {
    throw new DemoSetupError(
      'the Redlock demo runs from the repository with its devDependencies ' +
        `@sesamecare-oss/redlock and ioredis (npm install): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** One ioredis client to 127.0.0.1:`port` that fails fast instead of queueing forever. */
export function redisClient(lib: RedlockLibrary, port: number): RedisClient {
  return new lib.Redis({
    host: '127.0.0.1',
    port,
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    // A node killed -9 and restarted: reconnect soon, quietly.
    retryStrategy: () => 100,
    lazyConnect: false,
  });
}

/**
 * Redlock with no retries of its own (each scenario decides when to try again) and no automatic
 * extension: `acquire` never extends (only `using` does, by a timer in the holder's own process —
 * which SIGSTOP freezes with the rest of it, so it could not save a paused holder anyway).
 * driftFactor stays at the library's 0.01: the validity it reports is TTL − 1 % − 2 ms.
 */
export function newRedlock(lib: RedlockLibrary, clients: readonly RedisClient[]): RedlockClass {
  return new lib.Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
}
