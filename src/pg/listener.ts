// One LISTEN connection per backend object, shared by all its waiters and observers. A release,
// a revoke, a resignation or a new leader sends pg_notify(channel, row name) in the statement
// that made the change (delivered at its commit); a waiter arms a wake-up for its row BEFORE it
// tries its take, so a notification sent between a failed take and the wait is not missed.
//
// Notifications are only a hint: a holder that dies sends none, and one sent while the LISTEN
// connection is down is lost (PostgreSQL docs, NOTIFY: it is delivered only to sessions
// listening at the time). So every wait is also bounded by a poll (wait.ts), and a broken LISTEN
// connection is re-opened by the next waiter rather than trusted.
import type pg from 'pg';

/** Pause before a waiter retries a failed LISTEN connection, in ms. */
const relistenBackoffMs = 1_000;

export interface Wakeup {
  /** Resolves on a notification for the row, after `ms`, or when `signal` aborts (rejects). */
  wait(ms: number, signal: AbortSignal): Promise<'notified' | 'timeout'>;
  cancel(): void;
}

export class Listener {
  readonly #pool: pg.Pool;
  readonly #channel: string;
  readonly #enabled: boolean;
  readonly #waiters = new Map<string, Set<() => void>>();
  #client: pg.PoolClient | undefined;
  #connecting: Promise<void> | undefined;
  #failedAtMs = -Infinity;
  #closed = false;
  /** Notifications received (diagnostics and tests). */
  received = 0;

  constructor(pool: pg.Pool, channel: string, enabled: boolean) {
    this.#pool = pool;
    this.#channel = channel;
    this.#enabled = enabled;
  }

  /** Open the LISTEN connection (if enabled and not open); failures leave polling in charge. */
  ensure(): Promise<void> {
    if (!this.#enabled || this.#closed || this.#client !== undefined) return Promise.resolve();
    if (performance.now() - this.#failedAtMs < relistenBackoffMs) return Promise.resolve();
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #connect(): Promise<void> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.#pool.connect();
      const c = client;
      c.on('notification', (n) => this.#notify(n.payload));
      c.on('error', () => this.#drop(c, true));
      await c.query(`LISTEN "${this.#channel}"`);
      if (this.#closed) {
        c.release();
        return;
      }
      this.#client = c;
    } catch {
      if (client !== undefined) this.#drop(client, true);
      this.#failedAtMs = performance.now();
    }
  }

  #drop(c: pg.PoolClient, broken: boolean): void {
    if (this.#client === c) this.#client = undefined;
    try {
      c.release(broken);
    } catch {
      // released already
    }
  }

  #notify(payload: string | undefined): void {
    this.received++;
    if (payload === undefined) return;
    for (const f of this.#waiters.get(payload) ?? []) f();
  }

  /** Arm a wake-up for `row` (before trying the take it waits to retry). */
  arm(row: string): Wakeup {
    let fired = false;
    let resolveWait: ((v: 'notified') => void) | undefined;
    const on = (): void => {
      fired = true;
      resolveWait?.('notified');
    };
    const set = this.#waiters.get(row) ?? new Set();
    set.add(on);
    this.#waiters.set(row, set);
    const cancel = (): void => {
      set.delete(on);
      if (set.size === 0 && this.#waiters.get(row) === set) this.#waiters.delete(row);
    };
    return {
      cancel,
      wait: (ms, signal) =>
        new Promise((resolve, reject) => {
          if (signal.aborted) return reject(signal.reason as Error);
          if (fired) return resolve('notified');
          const onAbort = (): void => {
            clearTimeout(timer);
            reject(signal.reason as Error);
          };
          const timer = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve('timeout');
          }, ms);
          resolveWait = (v) => {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            resolve(v);
          };
          signal.addEventListener('abort', onAbort, { once: true });
        }),
    };
  }

  /** End the LISTEN connection (returned to the pool). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connecting;
    const c = this.#client;
    this.#client = undefined;
    if (c !== undefined) {
      await c.query(`UNLISTEN "${this.#channel}"`).catch(() => undefined);
      this.#drop(c, false);
    }
  }
}
