// The Session's lease API over the lease table: the SDK's Session class (its jeopardy state
// machine, signals and remainingMs) runs unchanged on it. Honest in the way session.ts needs:
// keepAliveOnce answers only after the database has moved expires_at to (its clock at the
// UPDATE) + TTL, which is after our send, so the session's deadline counted from the send time
// is earlier than the database's expiry (session-state.ts, "Safety"); a row already expired or
// revoked is LeaseNotFoundError, which ends the session at once.
import type { CallOptions } from '../client/call-options.js';
import { LeaseNotFoundError, UnavailableError } from '../client/errors.js';
import type { SessionTransport } from '../client/session.js';
import { withCall } from './call.js';
import type { Db } from './db.js';
import { sessionRow } from './sql.js';

/** The smallest TTL granted, in s (etcd's default minimum: 2 × its election timeout). */
export const ttlSecondsMin = 2;

export class PgSessionTransport implements SessionTransport {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  grant(ttlSeconds: number, options: CallOptions): Promise<{ id: bigint; ttlSeconds: number }> {
    const ttlMs = Math.round(Math.max(ttlSecondsMin, ttlSeconds) * 1000);
    return withCall('pg session grant', options, async () => {
      const r = await this.#db.run(this.#db.sql.grant, [ttlMs]);
      const row = r.rows[0];
      if (row === undefined) throw new UnavailableError('UNAVAILABLE', 'pg grant returned no row');
      return { id: BigInt(row.session_id as string), ttlSeconds: Number(row.ttl_ms) / 1000 };
    });
  }

  keepAliveOnce(id: bigint, options: CallOptions): Promise<{ ttlSeconds: number }> {
    return withCall('pg session renewal', options, async () => {
      const r = await this.#db.run(this.#db.sql.renew, [sessionRow(id)]);
      const row = r.rows[0];
      if (row === undefined) {
        throw new LeaseNotFoundError(
          'LEASE_NOT_FOUND',
          `pg session ${id}: expired or revoked by the database clock`,
        );
      }
      return { ttlSeconds: Number(row.ttl_ms) / 1000 };
    });
  }

  revoke(id: bigint, options: CallOptions): Promise<unknown> {
    return withCall('pg session revoke', options, async () => {
      const r = await this.#db.run(this.#db.sql.revoke, [
        sessionRow(id),
        id.toString(),
        this.#db.sql.channel,
      ]);
      if (Number(r.rows[0]?.revoked ?? 0) === 0) {
        throw new LeaseNotFoundError('LEASE_NOT_FOUND', `pg session ${id}: already gone`);
      }
      return r.rows[0];
    });
  }
}
