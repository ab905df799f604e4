// Errors of the PostgreSQL backend besides the SDK's own (src/client/errors.ts: the session's
// LeaseNotFoundError, TimeoutError, SessionExpiredError; recipe-errors.ts: RecipeError).

/** leasedTransaction found that the grant no longer holds by the database's clock; rolled back. */
export class LeaseLostError extends Error {
  readonly code = 'PG_LEASE_LOST';
  /** The lock or election row name. */
  readonly row: string;
  readonly token: bigint;
  constructor(row: string, token: bigint, message: string) {
    super(message);
    this.name = 'LeaseLostError';
    this.row = row;
    this.token = token;
  }
}
