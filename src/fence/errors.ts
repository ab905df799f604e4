// Typed errors of tenure/fence: a stable string `code` to match on, the data a caller needs to
// decide what to do, and the underlying error as `cause`.

/** Stable codes; new ones may be added, existing ones never change meaning. */
export type FenceErrorCode =
  | 'FENCE_STALE_TOKEN'
  | 'FENCE_INVALID_TOKEN'
  | 'FENCE_INVALID_SCOPE'
  | 'FENCE_HANDLE_CLOSED'
  | 'IDEMPOTENCY_IN_PROGRESS'
  | 'IDEMPOTENCY_IN_DOUBT';

/** Base class of every error this module throws on purpose. */
export class FenceError extends Error {
  readonly code: FenceErrorCode;

  constructor(code: FenceErrorCode, message: string, options: { readonly cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The resource refused a write because a higher token had already been accepted for the scope:
 * the writer is a zombie (an earlier holder that has not yet noticed it lost the lock). Retrying
 * with the same token can never succeed; the writer must stop acting and re-acquire.
 *
 * `current` is the token that makes `presented` stale. Where the resource checks the holder's key
 * itself (the etcd adapter), `current` is the token of whoever holds the lock now, and 0n when
 * nobody does: the presented token lost its key, which is just as final.
 */
export class StaleTokenError extends FenceError {
  readonly scope: string;
  readonly presented: bigint;
  readonly current: bigint;

  constructor(
    scope: string,
    presented: bigint,
    current: bigint,
    options: { cause?: unknown } = {},
  ) {
    super(
      'FENCE_STALE_TOKEN',
      `fence ${JSON.stringify(scope)}: token ${presented} is stale (current ${current})`,
      options,
    );
    this.scope = scope;
    this.presented = presented;
    this.current = current;
  }
}

/** A token that is not a non-negative integer (or a header that does not parse as one). */
export class InvalidTokenError extends FenceError {
  constructor(message: string) {
    super('FENCE_INVALID_TOKEN', message);
  }
}

/** A scope the adapter cannot store (empty, too long, or unsafe as a file name). */
export class InvalidScopeError extends FenceError {
  constructor(message: string) {
    super('FENCE_INVALID_SCOPE', message);
  }
}

/** Another caller holds the idempotency key and its effect has not finished (yet). */
export class IdempotencyInProgressError extends FenceError {
  readonly key: string;
  constructor(key: string) {
    super('IDEMPOTENCY_IN_PROGRESS', `idempotency key ${JSON.stringify(key)} is in progress`);
    this.key = key;
  }
}

/**
 * The key was claimed long ago and never completed: the claimant may have crashed before, during
 * or after the effect. Under the at-most-once default nobody knows whether the effect happened; a
 * person or a reconciler must look at the effect's target and then `resolve` or `forget` the key.
 */
export class IdempotencyInDoubtError extends FenceError {
  readonly key: string;
  readonly claimedAgoMs: number;
  constructor(key: string, claimedAgoMs: number) {
    super(
      'IDEMPOTENCY_IN_DOUBT',
      `idempotency key ${JSON.stringify(key)} was claimed ${claimedAgoMs} ms ago and never ` +
        'completed: the effect may or may not have happened',
    );
    this.key = key;
    this.claimedAgoMs = claimedAgoMs;
  }
}
