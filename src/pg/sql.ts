// The one table of the PostgreSQL backend and every statement run on it. Each operation that
// decides something (take, renew, release, revoke) is ONE statement, so the database's row locks
// order it against every other one, and its expiry decisions use the database's clock
// (clock_timestamp(), the time the statement evaluates the condition, not the transaction start):
// the grantor's clock, as etcd's leases use the leader's.
//
// Rows (`name` is the primary key):
//   session/<id>  a session (a lease): ttl_ms and expires_at; renewal moves expires_at.
//   lock/<name>   a lock: session_id (the holder's session, NULL once released), token.
//   elect/<name>  an election: like a lock, plus value (the leader's), and last_value and
//                 last_token: the last leader that STARTED (recordLeader), the next term's
//                 `previous`.
// A lock or election row is held while session_id is set and that session row is unexpired, so
// a holder's renewal is one UPDATE of its session row, however many locks it holds. Rows are
// never deleted, so a name's token only grows: every take sets token = old token + 1.
import { quoteTable } from '../fence/postgres.js';

/** Default table name (schema-qualified names are allowed: `app.tenure_leases`). */
export const tableDefault = 'tenure_leases';

export const sessionRow = (id: bigint): string => `session/${id}`;
export const lockRow = (name: string): string => `lock/${name}`;
export const electionRow = (name: string): string => `elect/${name}`;

export interface Statements {
  /** The LISTEN/NOTIFY channel of this table (a plain string for pg_notify). */
  readonly channel: string;
  readonly migrate: readonly string[];
  /** $1 ttl_ms → session_id, ttl_ms */
  readonly grant: string;
  /** $1 row name → ttl_ms (no row: expired or revoked) */
  readonly renew: string;
  /** $1 row name, $2 session id, $3 channel → revoked (count) */
  readonly revoke: string;
  /** $1 row, $2 session id, $3 value, $4 channel → token, last_value, last_token */
  readonly take: string;
  /** $1 row, $2 session id, $3 token, $4 value → one row if recorded (the term still holds) */
  readonly recordLeader: string;
  /** $1 row → ms until the holder's session expires by the DB clock (no row: free) */
  readonly holderExpiry: string;
  /** $1 row, $2 session id, $3 token, $4 channel → one row if released */
  readonly release: string;
  /** $1 row, $2 session id, $3 token, $4 value, $5 channel → one row if proclaimed */
  readonly proclaim: string;
  /** $1 row → the current holder (session unexpired) */
  readonly holder: string;
  /** $1 row, $2 session id, $3 token → one row if the grant still holds; locks the row */
  readonly checkHeld: string;
}

export function statements(table: string): Statements {
  const t = quoteTable(table);
  const seq = quoteTable(`${table}_ids`);
  const channel = `${table}_wake`;
  // nextval takes the sequence's name as text; quoteTable admits no quote characters.
  const seqText = `'${seq}'`;
  const sessionOf = (alias: string): string => `'session/' || ${alias}.session_id`;
  // A held row: its session is set and unexpired by the DB clock now. The session row is locked
  // FOR SHARE with no condition on its expiry, and the expiry compared outside the subquery: a
  // take then waits for an in-flight renewal of that session and judges the version it commits.
  // At READ COMMITTED a subquery's conditions are checked on the statement's snapshot before any
  // row lock is tried (PostgreSQL docs, "Transaction Isolation", 13.2.1), so an expiry test
  // inside it would skip a row whose renewal, granted in time, commits meanwhile.
  // `unseen` is the verdict when the session row is not in the statement's snapshot. Rows are
  // never deleted, so such a row was granted after the statement began: it is live. A take that
  // waited on the lock row (behind a release, say) and then finds it taken by a brand-new session
  // must count it as held (`true`), or two sessions would hold the row at once.
  const heldBy = (alias: string, unseen: boolean): string =>
    `COALESCE((SELECT h.expires_at FROM ${t} h WHERE h.name = ${sessionOf(alias)} FOR SHARE)
       > clock_timestamp(), ${unseen})`;
  return {
    channel,
    migrate: [
      `CREATE SEQUENCE IF NOT EXISTS ${seq}`,
      `CREATE TABLE IF NOT EXISTS ${t} (
         name text PRIMARY KEY,
         session_id bigint,
         token bigint NOT NULL DEFAULT 0 CHECK (token >= 0),
         value bytea,
         last_value bytea,
         last_token bigint,
         ttl_ms integer CHECK (ttl_ms > 0),
         expires_at timestamptz,
         revision bigint NOT NULL DEFAULT 0
       )`,
    ],
    grant: `INSERT INTO ${t} (name, session_id, ttl_ms, expires_at)
      SELECT 'session/' || id, id, $1::integer, clock_timestamp() + $1::integer * interval '1 ms'
      FROM (SELECT nextval(${seqText}) AS id) n
      RETURNING session_id, ttl_ms`,
    renew: `UPDATE ${t} SET expires_at = clock_timestamp() + ttl_ms * interval '1 ms'
      WHERE name = $1 AND expires_at > clock_timestamp()
      RETURNING ttl_ms`,
    // Revoking ends the session's holds at once; their waiters are told in the same statement.
    revoke: `WITH s AS (
        UPDATE ${t} SET expires_at = '-infinity'
        WHERE name = $1 AND expires_at > clock_timestamp() RETURNING name),
      n AS (SELECT pg_notify($3, l.name) FROM ${t} l
        WHERE l.session_id = $2::bigint AND l.name <> $1 AND EXISTS (SELECT 1 FROM s))
      SELECT (SELECT count(*) FROM s)::int AS revoked, (SELECT count(*) FROM n)::int AS told`,
    // Take: insert the first row of a name, or take it over when the last holder released it or
    // its session has expired by the DB clock; only while the taker's own session is unexpired.
    // last_value/last_token are not touched: they name the last leader that started (set by
    // recordLeader), which RETURNING reports as the new term's predecessor.
    take: `INSERT INTO ${t} AS l (name, session_id, value, token, revision)
      SELECT $1, $2::bigint, $3::bytea, 1, nextval(${seqText})
      FROM ${t} me WHERE me.name = 'session/' || $2::bigint AND me.expires_at > clock_timestamp()
      ON CONFLICT (name) DO UPDATE
        SET session_id = EXCLUDED.session_id, value = EXCLUDED.value,
            token = l.token + 1, revision = EXCLUDED.revision
        WHERE l.session_id IS NULL OR NOT ${heldBy('l', true)}
      RETURNING token, last_value, last_token,
        CASE WHEN left($1, 6) = 'elect/' THEN pg_notify($4, $1) END AS told`,
    // Fenced on the term, like proclaim: only a leader that still holds records itself, so a
    // winner whose fencePrevious failed (it resigns without recording) never becomes previous.
    recordLeader: `UPDATE ${t} l SET last_value = $4::bytea, last_token = $3::bigint
      WHERE l.name = $1 AND l.session_id = $2::bigint AND l.token = $3::bigint
        AND ${heldBy('l', false)} RETURNING name`,
    holderExpiry: `SELECT GREATEST(0, extract(epoch FROM h.expires_at - clock_timestamp()) * 1000)
        AS ms
      FROM ${t} l JOIN ${t} h ON h.name = ${sessionOf('l')}
      WHERE l.name = $1 AND h.expires_at > clock_timestamp()`,
    release: `WITH r AS (
        UPDATE ${t} SET session_id = NULL
        WHERE name = $1 AND session_id = $2::bigint AND token = $3::bigint RETURNING name)
      SELECT pg_notify($4, name) FROM r`,
    proclaim: `WITH p AS (
        UPDATE ${t} l SET value = $4::bytea, revision = nextval(${seqText})
        WHERE l.name = $1 AND l.session_id = $2::bigint AND l.token = $3::bigint
          AND ${heldBy('l', false)} RETURNING name)
      SELECT pg_notify($5, name) FROM p`,
    holder: `SELECT l.session_id, l.token, l.value, l.revision
      FROM ${t} l JOIN ${t} h ON h.name = ${sessionOf('l')}
      WHERE l.name = $1 AND h.expires_at > clock_timestamp()`,
    // FOR SHARE of the lock row: a take's ON CONFLICT DO UPDATE locks the row FOR NO KEY UPDATE
    // (no key column changes), which conflicts with FOR SHARE but not with FOR KEY SHARE; so the
    // take waits until the checking transaction ends, and its writes commit before any next token.
    checkHeld: `SELECT l.token FROM ${t} l JOIN ${t} h ON h.name = ${sessionOf('l')}
      WHERE l.name = $1 AND l.session_id = $2::bigint AND l.token = $3::bigint
        AND h.expires_at > clock_timestamp()
      FOR SHARE OF l`,
  };
}
