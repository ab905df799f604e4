// Taking a lock or election row: try the one take statement; if the row is held, wait for a
// notification, the poll interval, or the holder's expiry as the database reports it, whichever
// comes first, and try again. There is no queue: whoever's take statement the database runs first
// after the row becomes free wins (no FIFO fairness; see docs/postgres.md). A grant is declared
// only when the statement returned the row AND the session is valid at that moment; a take that
// succeeded after its caller gave up (abort, timeout, invalid session) is released again, fenced
// on its token, so no phantom holder is left behind.
import { CallScope, type CallOptions } from '../client/call-options.js';
import { SessionExpiredError } from '../client/errors.js';
import { RecipeError } from '../client/recipe-errors.js';
import type { Session } from '../client/session.js';
import { withCall } from './call.js';
import type { Db } from './db.js';
import type { Listener } from './listener.js';

/** Slack after the holder's reported expiry before re-trying, in ms (timer granularity). */
const expirySlackMs = 5;

export interface Taken {
  readonly token: bigint;
  /** The value and token of the holder before this take; null for the first take ever. */
  readonly previous: { readonly value: Buffer; readonly token: bigint } | null;
}

/** What a waiter did, for tests and metrics. */
export type PgTraceEvent =
  | { readonly type: 'held'; readonly row: string; readonly expiresInMs: number }
  | { readonly type: 'woken'; readonly row: string; readonly by: 'notify' | 'poll' }
  | { readonly type: 'granted'; readonly row: string; readonly token: bigint }
  | { readonly type: 'stuck'; readonly row: string; readonly token: bigint; deadlineMs: number };

export type PgTrace = (event: PgTraceEvent) => void;

export interface TakeRequest {
  readonly db: Db;
  readonly listener: Listener;
  readonly row: string;
  readonly session: Session;
  readonly value: Buffer | null;
  /** Re-check at least this often while waiting, in ms. */
  readonly pollIntervalMs: number;
  /** Aborts when the backend closes. */
  readonly closing: AbortSignal;
  /** Try once (tryAcquire). */
  readonly once: boolean;
  readonly trace?: PgTrace | undefined;
}

/** Per session, the rows it holds or waits for in this process (one hold per session and row). */
const busy = new WeakMap<Session, Set<string>>();

export function claim(session: Session, row: string): () => void {
  const set = busy.get(session) ?? new Set<string>();
  busy.set(session, set);
  if (set.has(row)) {
    throw new RecipeError('ALREADY_QUEUED', `${row}: this session already holds or waits for it`);
  }
  set.add(row);
  return () => set.delete(row);
}

/** Release a row by token (fenced): true if this call released it. */
export async function releaseRow(
  db: Db,
  row: string,
  session: Session,
  token: bigint,
  options: CallOptions,
): Promise<boolean> {
  return withCall(`pg release ${row}`, options, async () => {
    const r = await db.run(db.sql.release, [
      row,
      session.leaseId.toString(),
      token.toString(),
      db.sql.channel,
    ]);
    return (r.rowCount ?? 0) > 0;
  });
}

/**
 * The whole take's cancellation: the caller's signal and timeoutMs (none: wait until granted),
 * the backend's close, and the session's expiry.
 */
function scopeOf(req: TakeRequest, options: CallOptions): { signal: AbortSignal; done(): void } {
  const expired = new AbortController();
  const onExpired = (): void =>
    expired.abort(new SessionExpiredError('SESSION_EXPIRED', `${req.row}: the session expired`));
  req.session.on('expired', onExpired);
  const signal =
    options.signal === undefined
      ? expired.signal
      : AbortSignal.any([options.signal, expired.signal]);
  const scope = new CallScope(
    { ...options, signal },
    Number.POSITIVE_INFINITY,
    req.closing,
    req.row,
  );
  return {
    signal: scope.signal,
    done: () => {
      req.session.off('expired', onExpired);
      scope.dispose();
    },
  };
}

/** Take the row, waiting while it is held (unless `once`); undefined only when `once`. */
export async function take(req: TakeRequest, options: CallOptions): Promise<Taken | undefined> {
  const { db, listener, row, session } = req;
  const scope = scopeOf(req, options);
  try {
    for (;;) {
      scope.signal.throwIfAborted();
      session.assertValid();
      void listener.ensure();
      const wake = listener.arm(row);
      try {
        const attempt = db.run(db.sql.take, [
          row,
          session.leaseId.toString(),
          req.value,
          db.sql.channel,
        ]);
        // No statement deadline of its own: a take waits on the row's lock for as long as a
        // leasedTransaction of the holder runs (it must: that is what orders the holder's writes
        // before the next token). The scope bounds it: the caller's timeoutMs and signal, the
        // session's expiry, the backend's close.
        const r = await withCall(
          `pg take ${row}`,
          { signal: scope.signal },
          () => attempt,
          Number.POSITIVE_INFINITY,
        ).catch((e: unknown) => {
          // Given up while the statement ran: if it took the row after all, give it back.
          void attempt.then(
            (late) => {
              const t = late.rows[0]?.token as string | undefined;
              if (t !== undefined)
                void releaseRow(db, row, session, BigInt(t), {}).catch(() => false);
            },
            () => undefined,
          );
          throw e;
        });
        const got = r.rows[0];
        if (got !== undefined) {
          const token = BigInt(got.token as string);
          if (!scope.signal.aborted && session.valid()) {
            req.trace?.({ type: 'granted', row, token });
            const lastValue = got.last_value as Buffer | null;
            const lastToken = got.last_token as string | null;
            return {
              token,
              previous:
                lastToken === null
                  ? null
                  : { value: lastValue ?? Buffer.alloc(0), token: BigInt(lastToken) },
            };
          }
          await releaseRow(db, row, session, token, {}).catch(() => false);
          scope.signal.throwIfAborted();
          session.assertValid();
          continue;
        }
        if (req.once) return undefined;
        const e = await withCall(`pg holder of ${row}`, { signal: scope.signal }, () =>
          db.run(db.sql.holderExpiry, [row]),
        );
        const expiresInMs = Number(e.rows[0]?.ms ?? 0);
        req.trace?.({ type: 'held', row, expiresInMs });
        const how = await wake.wait(
          Math.min(req.pollIntervalMs, expiresInMs + expirySlackMs),
          scope.signal,
        );
        req.trace?.({ type: 'woken', row, by: how === 'notified' ? 'notify' : 'poll' });
      } finally {
        wake.cancel();
      }
    }
  } finally {
    scope.done();
  }
}
