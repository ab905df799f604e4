// Idempotency keys, for effects that cannot check a token: a third-party API, an email, a payment.
// A store of keys makes a retried or duplicated effect happen once:
//
//   const { value } = await once(store, `invoice-mail/${invoiceId}`, () => mailer.send(mail));
//
// A key is claimed (pending) before the effect runs and marked done with the effect's result
// after; a caller that finds the key done gets the recorded result without running anything, and
// concurrent callers with one key run the effect at most once (the claim is atomic in the store).
// An effect that throws releases its claim, so the call can be retried.
//
// The trade-off is about a claimant that dies mid-way, after claiming and before recording done:
//
//   - 'at-most-once' (the default; record-then-effect): the key stays pending; later callers get
//     IdempotencyInProgressError and, once the claim is older than `inDoubtAfterMs`,
//     IdempotencyInDoubtError. The effect is never repeated; it may never have happened. Someone
//     must look at the target and then `complete` or `forget` the key. This is the safe default
//     for the effects this module is for, where a duplicate (a second charge, a second email)
//     does harm that cannot be taken back, while a missing one can be found and redone.
//   - 'at-least-once' (effect-then-record): a claim older than `inDoubtAfterMs` is taken over and
//     the effect runs again. Nothing is lost, but a slow or dead claimant's effect may happen
//     twice. Choose it when the target deduplicates by itself (pass the key along, e.g. an
//     `Idempotency-Key` header) or a duplicate is harmless.
//
// Neither mode makes the effect and the record atomic; only a target that takes the key itself
// (or a fenced write, see contract.ts) can. Results are stored as JSON.
import { randomUUID } from 'node:crypto';
import { IdempotencyInDoubtError, IdempotencyInProgressError } from './errors.js';
import { quoteTable, type PgPool } from './postgres.js';

export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [k: string]: JsonValue };

export type ClaimOutcome =
  /** The caller holds the key and must run the effect, then `complete` or `release`. */
  | { readonly state: 'claimed' }
  /** Done before: the recorded result. */
  | { readonly state: 'done'; readonly result: JsonValue }
  /** Someone else holds the claim, taken this long ago. */
  | { readonly state: 'pending'; readonly claimedAgoMs: number };

/** Where keys live. Every method is atomic on its own. */
export interface IdempotencyStore {
  /**
   * Claim `key` for `claimant` unless it is done or claimed. With `takeOverAfterMs`, a claim
   * at least that old is taken over (at-least-once).
   */
  claim(
    key: string,
    claimant: string,
    options: { readonly takeOverAfterMs?: number },
  ): Promise<ClaimOutcome>;
  /** Mark `key` done with `result` (whoever claimed it: the effect happened). */
  complete(key: string, result: JsonValue): Promise<void>;
  /** Drop `claimant`'s pending claim (the effect failed and did not happen). */
  release(key: string, claimant: string): Promise<void>;
  /** Drop the key whatever its state (an operator resolving an in-doubt key, or expiry). */
  forget(key: string): Promise<void>;
}

export type OnceMode = 'at-most-once' | 'at-least-once';

export interface OnceOptions {
  /** See the header. Default 'at-most-once'. */
  readonly mode?: OnceMode;
  /**
   * Age, in ms, after which an unfinished claim counts as abandoned: reported as in doubt
   * ('at-most-once') or taken over ('at-least-once'). Default 60 000. Make it longer than the
   * effect can take, or at-least-once may run it twice even without a crash.
   */
  readonly inDoubtAfterMs?: number;
  /** Who claims; default a random UUID per call. Only used to release the right claim. */
  readonly claimant?: string;
}

export interface OnceResult<T> {
  /** True if this call ran the effect; false if the key was done before. */
  readonly ran: boolean;
  readonly value: T;
}

const inDoubtAfterMsDefault = 60_000;
/** Longest key, in bytes: keys are primary keys and map entries. */
export const idempotencyKeyBytesMax = 512;

/** Run `effect` once per `key` across retries, duplicates and concurrent callers (see header). */
export async function once<T extends JsonValue>(
  store: IdempotencyStore,
  key: string,
  effect: () => Promise<T> | T,
  options: OnceOptions = {},
): Promise<OnceResult<T>> {
  if (key.length === 0 || Buffer.byteLength(key) > idempotencyKeyBytesMax) {
    throw new RangeError(`idempotency key must be 1..${idempotencyKeyBytesMax} bytes`);
  }
  const mode = options.mode ?? 'at-most-once';
  const inDoubtAfterMs = options.inDoubtAfterMs ?? inDoubtAfterMsDefault;
  const claimant = options.claimant ?? randomUUID();
  const outcome = await store.claim(
    key,
    claimant,
    mode === 'at-least-once' ? { takeOverAfterMs: inDoubtAfterMs } : {},
  );
  switch (outcome.state) {
    case 'done':
      // The caller's type for a result recorded by an earlier call with the same key.
      return { ran: false, value: outcome.result as T };
    case 'pending':
      if (outcome.claimedAgoMs >= inDoubtAfterMs) {
        throw new IdempotencyInDoubtError(key, outcome.claimedAgoMs);
      }
      throw new IdempotencyInProgressError(key);
    case 'claimed':
      break;
  }
  let value: T;
  try {
    value = await effect();
  } catch (e) {
    // The effect failed, so (as far as it tells us) it did not happen: let a retry run it.
    await store.release(key, claimant);
    throw e;
  }
  // If this fails the key stays pending: in doubt, which is the truth (the effect happened).
  await store.complete(key, value);
  return { ran: true, value };
}

interface MemoryEntry {
  state: 'pending' | 'done';
  claimant: string;
  claimedAtMs: number;
  result: JsonValue;
}

/** Keys in this process's memory: for tests, and for deduplicating within one process. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, MemoryEntry>();
  readonly #nowMs: () => number;

  /** `nowMs` is a monotonic clock in ms (injectable for tests). */
  constructor(options: { readonly nowMs?: () => number } = {}) {
    this.#nowMs = options.nowMs ?? (() => performance.now());
  }

  // Each method runs to completion without awaiting, so each is atomic within the process.
  claim(
    key: string,
    claimant: string,
    options: { readonly takeOverAfterMs?: number },
  ): Promise<ClaimOutcome> {
    const now = this.#nowMs();
    const e = this.#entries.get(key);
    if (e?.state === 'done') return Promise.resolve({ state: 'done', result: e.result });
    if (e !== undefined) {
      const ago = now - e.claimedAtMs;
      if (options.takeOverAfterMs === undefined || ago < options.takeOverAfterMs) {
        return Promise.resolve({ state: 'pending', claimedAgoMs: ago });
      }
    }
    this.#entries.set(key, { state: 'pending', claimant, claimedAtMs: now, result: null });
    return Promise.resolve({ state: 'claimed' });
  }

  complete(key: string, result: JsonValue): Promise<void> {
    const e = this.#entries.get(key);
    if (e?.state !== 'done') {
      this.#entries.set(key, {
        state: 'done',
        claimant: e?.claimant ?? '',
        claimedAtMs: 0,
        result,
      });
    }
    return Promise.resolve();
  }

  release(key: string, claimant: string): Promise<void> {
    const e = this.#entries.get(key);
    if (e?.state === 'pending' && e.claimant === claimant) this.#entries.delete(key);
    return Promise.resolve();
  }

  forget(key: string): Promise<void> {
    this.#entries.delete(key);
    return Promise.resolve();
  }
}

/**
 * Keys in a PostgreSQL table, shared by every process that uses the database. Each method is one
 * autocommitted statement; the claim is an upsert, so concurrent claimants of one key serialise
 * on its row and exactly one of them gets it. Ages are measured by the database's clock, the one
 * clock all claimants share.
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly #pool: Pick<PgPool, 'query'>;
  readonly #table: string;

  /** `table` defaults to `tenure_idempotency`; create it with `createTable()`. */
  constructor(pool: Pick<PgPool, 'query'>, options: { readonly table?: string } = {}) {
    this.#pool = pool;
    this.#table = quoteTable(options.table ?? 'tenure_idempotency');
  }

  async createTable(): Promise<void> {
    await this.#pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         key text PRIMARY KEY,
         state text NOT NULL CHECK (state IN ('pending', 'done')),
         claimant text NOT NULL,
         claimed_at timestamptz NOT NULL,
         completed_at timestamptz,
         result jsonb
       )`,
    );
  }

  async claim(
    key: string,
    claimant: string,
    options: { readonly takeOverAfterMs?: number },
  ): Promise<ClaimOutcome> {
    const t = this.#table;
    // Insert a pending claim; on conflict take it over only if it is pending and old enough (and
    // take-over is wanted at all). RETURNING yields a row exactly when we hold the claim. The row
    // lock of the upsert makes this atomic against other claimants at READ COMMITTED.
    const takeOver = options.takeOverAfterMs ?? null;
    const claimed = await this.#pool.query(
      `INSERT INTO ${t} AS k (key, state, claimant, claimed_at)
       VALUES ($1, 'pending', $2, clock_timestamp())
       ON CONFLICT (key) DO UPDATE SET claimant = EXCLUDED.claimant, claimed_at = EXCLUDED.claimed_at
       WHERE k.state = 'pending' AND $3::bigint IS NOT NULL
         AND k.claimed_at <= clock_timestamp() - $3::bigint * interval '1 millisecond'
       RETURNING key`,
      [key, claimant, takeOver],
    );
    if (claimed.rowCount === 1) return { state: 'claimed' };
    const r = await this.#pool.query(
      `SELECT state, result,
              (extract(epoch FROM clock_timestamp() - claimed_at) * 1000)::float8 AS ago_ms
       FROM ${t} WHERE key = $1`,
      [key],
    );
    const row = r.rows[0];
    // Released between our two statements: report it as in progress (a retry will claim it);
    // looping here instead would need a bound for no real gain.
    if (row === undefined) return { state: 'pending', claimedAgoMs: 0 };
    if (row.state === 'done') return { state: 'done', result: (row.result ?? null) as JsonValue };
    return { state: 'pending', claimedAgoMs: Number(row.ago_ms) };
  }

  async complete(key: string, result: JsonValue): Promise<void> {
    await this.#pool.query(
      `INSERT INTO ${this.#table} AS k (key, state, claimant, claimed_at, completed_at, result)
       VALUES ($1, 'done', '', clock_timestamp(), clock_timestamp(), $2::jsonb)
       ON CONFLICT (key) DO UPDATE SET state = 'done', completed_at = EXCLUDED.completed_at,
         result = EXCLUDED.result
       WHERE k.state = 'pending'`,
      [key, JSON.stringify(result)],
    );
  }

  async release(key: string, claimant: string): Promise<void> {
    await this.#pool.query(
      `DELETE FROM ${this.#table} WHERE key = $1 AND claimant = $2 AND state = 'pending'`,
      [key, claimant],
    );
  }

  async forget(key: string): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#table} WHERE key = $1`, [key]);
  }
}
