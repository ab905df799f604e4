// The pool and statements one backend object shares with its sessions, locks and elections. pg
// is imported for its types only: `tenure/pg` loads the driver itself only when given a
// connection string (backend.ts).
import type pg from 'pg';
import { UnavailableError } from '../client/errors.js';
import type { Statements } from './sql.js';

/** A statement's answer, rows untyped until read (int8 arrives as a decimal string). */
export interface Rows {
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  readonly rowCount: number | null;
}

export interface Db {
  readonly pool: pg.Pool;
  readonly sql: Statements;
  /** Run one statement; a driver or server failure becomes UnavailableError (cause kept). */
  run(text: string, values: readonly unknown[]): Promise<Rows>;
}

export function makeDb(pool: pg.Pool, sql: Statements): Db {
  return {
    pool,
    sql,
    async run(text, values) {
      try {
        return await pool.query<Record<string, unknown>>(text, [...values]);
      } catch (e) {
        throw new UnavailableError('UNAVAILABLE', `pg: ${(e as Error).message}`, { cause: e });
      }
    },
  };
}
