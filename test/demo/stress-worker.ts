// One worker of the split-brain stress test (stress.test.ts forks five): in a loop, take the lock,
// write `writesPerTenure` rows (writer, token, seq) to PostgreSQL — through fencedTransaction, or
// with a plain INSERT for the unfenced run — and release. The test freezes workers with SIGSTOP
// at random; a worker resumed after its lease expired writes as a zombie, because it never checks
// its session or grant before a write (it only counts, for the report, the writes it sent while
// `grant.valid()` was false). A StaleTokenError ends the tenure, as the error asks.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { connect, Lock, type Session } from '../../src/client/index.js';
import { StaleTokenError, fencedTransaction } from '../../src/fence/index.js';

export interface StressWorkerConfig {
  readonly writer: string;
  readonly endpoints: readonly string[];
  readonly pgUrl: string;
  readonly lockName: string;
  /** The fence scope (fenced runs). */
  readonly scope: string;
  /** The table of writes: (id bigserial, writer, token, seq). */
  readonly table: string;
  readonly fenced: boolean;
  readonly ttlSeconds: number;
  readonly writesPerTenure: number;
  /** Pause between two writes of one tenure, in ms: it widens the window a pause can hit. */
  readonly writeGapMs: number;
}

export interface StressWorkerStats {
  readonly writer: string;
  tenures: number;
  accepted: number;
  rejected: number;
  /** Writes sent while the grant was no longer valid (observed, never acted upon). */
  zombieAttempts: number;
  errors: number;
  lastError: string;
}

export type StressWorkerMessage =
  | { readonly type: 'holding'; readonly token: string }
  | { readonly type: 'released' }
  | { readonly type: 'stats'; readonly stats: StressWorkerStats };

export type StressHostMessage = { readonly type: 'stop' };

// Named limits.
/** Bound on one acquire; a worker that waits longer starts over (with a new session if needed). */
const acquireTimeoutMs = 30_000;
/** Bound on one release. */
const releaseTimeoutMs = 2_000;
/** Pause after an error before the next round. */
const errorBackoffMs = 100;
/** Rounds per worker: far more than any run needs, so a lost `stop` cannot loop forever. */
const roundsMax = 100_000;

function send(m: StressWorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(m, () => resolve());
  });
}

async function main(config: StressWorkerConfig): Promise<void> {
  const stop = new AbortController();
  process.on('message', (m: StressHostMessage) => {
    if (m.type === 'stop') stop.abort(new Error('stop'));
  });
  process.on('disconnect', () => process.exit(3));

  const stats: StressWorkerStats = {
    writer: config.writer,
    tenures: 0,
    accepted: 0,
    rejected: 0,
    zombieAttempts: 0,
    errors: 0,
    lastError: '',
  };
  const client = await connect({ endpoints: config.endpoints });
  const pool = new pg.Pool({ connectionString: config.pgUrl, max: 1 });
  pool.on('error', () => {});
  const insert = `INSERT INTO ${config.table} (writer, token, seq) VALUES ($1, $2, $3)`;
  const write = async (token: bigint, seq: number): Promise<void> => {
    const values = [config.writer, token.toString(), seq];
    if (!config.fenced) {
      await pool.query(insert, values);
      return;
    }
    await fencedTransaction(pool, { scope: config.scope, token }, async (c) => {
      await c.query(insert, values);
    });
  };

  let session: Session | undefined;
  try {
    for (let round = 0; round < roundsMax && !stop.signal.aborted; round++) {
      try {
        if (session === undefined || session.phase === 'expired') {
          await session?.close().catch(() => undefined);
          session = undefined;
          session = await client.session({ ttlSeconds: config.ttlSeconds, signal: stop.signal });
        }
        const grant = await new Lock(client, session, config.lockName).acquire({
          signal: stop.signal,
          timeoutMs: acquireTimeoutMs,
        });
        stats.tenures += 1;
        void send({ type: 'holding', token: grant.token.toString() });
        try {
          for (let seq = 1; seq <= config.writesPerTenure; seq++) {
            // Counted for the report only: the write below goes out either way (a zombie).
            if (!grant.valid()) stats.zombieAttempts += 1;
            try {
              await write(grant.token, seq);
              stats.accepted += 1;
            } catch (e) {
              if (!(e instanceof StaleTokenError)) throw e;
              stats.rejected += 1;
              break;
            }
            await sleep(config.writeGapMs, undefined, { signal: stop.signal });
          }
        } finally {
          void send({ type: 'released' });
          await grant.release({ timeoutMs: releaseTimeoutMs }).catch(() => false);
        }
      } catch (e) {
        if (stop.signal.aborted) break;
        stats.errors += 1;
        stats.lastError = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        await sleep(errorBackoffMs);
      }
    }
  } finally {
    await send({ type: 'stats', stats });
    await session?.close().catch(() => undefined);
    await client.close();
    await pool.end().catch(() => undefined);
  }
}

main(JSON.parse(process.argv[2] ?? '{}') as StressWorkerConfig).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
