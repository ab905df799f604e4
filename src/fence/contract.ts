// The fence contract (Kleppmann, How to do distributed locking, 2016; etcd's API guarantees doc,
// "Notes on the usage of lock and lease"). An election bounds who may act; only a token check at
// the data bounds what a zombie can do: a holder that was paused, partitioned or slow may still be
// running after its lease expired and a successor was granted, and its writes arrive late. The
// resource itself must refuse them.
//
// Every adapter keeps, per scope, the highest token it has accepted (its high-water mark) and
// applies a write only if the write's token is not lower, atomically with the write itself:
//
//   - equal tokens are admitted, so one holder can write many times and retry a failed write;
//   - a lower token is refused with StaleTokenError (both tokens attached) and leaves no effect;
//   - the check and the effect are one step as seen by other writers of the same scope, so a
//     lower token's write can never land after a higher one was accepted.
//
// A scope is whatever the caller protects with one token sequence: a table, a row range, a file,
// a tenant. Scopes are independent; pick one per lock name, not one per process.
import { admits } from '../core/base/fencing-rule.js';
import { InvalidScopeError, InvalidTokenError, StaleTokenError } from './errors.js';

/**
 * A resource that admits writes by fencing token. `Tx` is what the effect gets to act through:
 * a database client inside the fenced transaction, a handle on a fenced directory, a Txn builder.
 */
export interface Fence<Tx> {
  /**
   * Run `effect` if `token` is at least the scope's high-water mark, raising the mark to `token`
   * atomically with the effect. Rejects with StaleTokenError (the effect does not run) otherwise.
   */
  write<T>(
    scope: string,
    token: bigint,
    effect: (tx: Tx) => Promise<T> | T,
    options?: FenceCallOptions,
  ): Promise<T>;
  /** The scope's high-water mark: the highest token accepted, or undefined if none yet. */
  current(scope: string, options?: FenceCallOptions): Promise<bigint | undefined>;
}

/** Per-call options. An aborted call rejects with `signal.reason`. */
export interface FenceCallOptions {
  readonly signal?: AbortSignal;
}

// Named limits.
/**
 * The largest token: etcd revisions and PostgreSQL `bigint` are signed 64-bit, so a larger value
 * cannot have come from a lock and could not be stored.
 */
export const tokenMax = 2n ** 63n - 1n;
/** Longest scope, in UTF-8 bytes: scopes become primary keys, file names and header values. */
export const scopeBytesMax = 512;
/** Longest decimal token text accepted from a header or a file (digits of tokenMax). */
export const tokenDigitsMax = tokenMax.toString().length;

/** The fence's one rule: a token is admitted if nothing higher was accepted before it. */
export { admits };

/** Throw StaleTokenError unless `token` is admitted by the scope's current mark. */
export function assertAdmitted(scope: string, token: bigint, mark: bigint | undefined): void {
  if (!admits(mark, token)) throw new StaleTokenError(scope, token, mark ?? 0n);
}

/** Throw InvalidTokenError unless `token` is a bigint in [0, tokenMax]. */
export function checkToken(token: unknown): asserts token is bigint {
  if (typeof token !== 'bigint') {
    throw new InvalidTokenError(`fencing token must be a bigint (got ${typeof token})`);
  }
  if (token < 0n || token > tokenMax) {
    throw new InvalidTokenError(`fencing token must be in [0, ${tokenMax}] (got ${token})`);
  }
}

/** Throw InvalidScopeError unless `scope` is a non-empty string of at most scopeBytesMax bytes. */
export function checkScope(scope: unknown): asserts scope is string {
  if (typeof scope !== 'string' || scope.length === 0) {
    throw new InvalidScopeError('fence scope must be a non-empty string');
  }
  if (Buffer.byteLength(scope) > scopeBytesMax) {
    throw new InvalidScopeError(`fence scope is longer than ${scopeBytesMax} bytes`);
  }
}

/**
 * Parse a decimal token (a header value, a file's content). Strict: digits only, no sign, no
 * spaces, no leading zeros, within tokenMax — anything else is a client bug worth reporting, not
 * a value to guess at.
 */
export function parseToken(text: string): bigint {
  if (!/^(0|[1-9][0-9]*)$/.test(text) || text.length > tokenDigitsMax) {
    throw new InvalidTokenError(
      `fencing token must be a decimal integer in [0, ${tokenMax}] (got ${JSON.stringify(text.slice(0, 40))})`,
    );
  }
  const token = BigInt(text);
  checkToken(token);
  return token;
}
