// A same-database lease check: when the resource lives in the PostgreSQL database that holds the
// lease table, the write itself can be made conditional on the lease, by the database's clock,
// with no token table. The transaction first locks the lock row FOR SHARE and checks that it
// still carries this grant's session and token and that the session row is unexpired NOW
// (clock_timestamp()); a take's INSERT … ON CONFLICT DO UPDATE locks the row FOR NO KEY UPDATE
// (no key column changes), which conflicts with FOR SHARE (not with FOR KEY SHARE: PostgreSQL
// docs, "Explicit Locking", 13.3.2), so no next holder can exist until this transaction ends: its
// writes are ordered before the next token. A waiting take has no statement deadline for that
// reason (take.ts), so a long transaction here delays the next holder by as long as it runs. Just before COMMIT the session's expiry is checked again, so
// a holder whose lease ran out meanwhile (paused, or slow) cannot commit, even if it does not yet
// know it has lost. Renewals (an UPDATE of the session row) are not blocked by the check.
import type pg from 'pg';
import { inTransaction } from '../fence/postgres.js';
import { LeaseLostError } from './errors.js';
import type { PgHold } from './lock.js';
import { statements, tableDefault } from './sql.js';

export interface LeasedTransactionOptions {
  /** The lease table; default `tenure_leases` (must match the backend's). */
  readonly table?: string;
  readonly signal?: AbortSignal;
}

/**
 * Run `fn` in a transaction that commits only while `grant` holds by the database's clock, at
 * its start and at its end; otherwise roll back and reject with LeaseLostError. `fn`'s own error
 * rolls back and is rethrown.
 */
export async function leasedTransaction<T>(
  pool: pg.Pool,
  grant: PgHold,
  fn: (client: pg.PoolClient) => Promise<T>,
  options: LeasedTransactionOptions = {},
): Promise<T> {
  const sql = statements(options.table ?? tableDefault);
  const args = [grant.row, grant.session.leaseId.toString(), grant.token.toString()];
  options.signal?.throwIfAborted();
  return inTransaction<pg.PoolClient, T>(pool, 'BEGIN', async (client) => {
    const check = async (when: string): Promise<void> => {
      const r = await client.query(sql.checkHeld, args);
      if ((r.rowCount ?? 0) === 0) {
        throw new LeaseLostError(
          grant.row,
          grant.token,
          `${grant.row}: token ${grant.token} no longer holds by the database clock (${when})`,
        );
      }
    };
    await check('at the start');
    const result = await fn(client);
    options.signal?.throwIfAborted();
    await check('before commit');
    return result;
  });
}
