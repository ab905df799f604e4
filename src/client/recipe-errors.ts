// What Lock, Election and LeaderElector report besides the client's own errors: RecipeError's
// codes, and the trace events by which callers (and the tests) see queueing, waiting and holding.

/** Why a holder's signal aborted or a recipe call failed, besides the session's own errors. */
export type RecipeErrorCode =
  /** The own key was deleted or replaced (lease revoked or expired, operator delete). */
  | 'KEY_DELETED'
  /** The own key was overwritten on another lease (a registry id put by another session). */
  | 'KEY_REPLACED'
  /** The holder released the lock. */
  | 'RELEASED'
  /** The leader resigned. */
  | 'RESIGNED'
  /** The leader handed leadership to a chosen successor. */
  | 'HANDED_OFF'
  /** The registration was unregistered by its owner (registry.ts). */
  | 'UNREGISTERED'
  /** The elector was stopped. */
  | 'STOPPED'
  /** Proclaim or a fenced write found that this contender no longer leads. */
  | 'NOT_LEADER'
  /** The same session already queues for (or holds) this name in this process. */
  | 'ALREADY_QUEUED'
  /** The holder reported no progress within progressDeadlineMs: treated as stuck. */
  | 'STUCK'
  /** The fencePrevious hook failed or ran out of time: the new term was not started. */
  | 'FENCE_FAILED'
  /** The backend does not offer this operation (hand-off on PostgreSQL, say). */
  | 'UNSUPPORTED';

export class RecipeError extends Error {
  readonly code: RecipeErrorCode;
  constructor(code: RecipeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RecipeError';
    this.code = code;
  }
}

/** Observability (queue, wait and hold events); also how the tests count wake-ups. */
export type RecipeTraceEvent =
  | { readonly type: 'queued'; readonly key: string; readonly token: bigint }
  /** A read of the queue made while waiting (the first one, and one per wake-up). */
  | { readonly type: 'read'; readonly key: string; readonly token: bigint }
  | {
      readonly type: 'watch-predecessor';
      readonly key: string;
      readonly token: bigint;
      readonly predecessor: string;
    }
  | {
      readonly type: 'wake';
      readonly key: string;
      readonly token: bigint;
      readonly reason: 'predecessor-deleted' | 'compacted';
    }
  | {
      readonly type: 'lock-delay';
      readonly key: string;
      readonly token: bigint;
      readonly ms: number;
    }
  | { readonly type: 'yield'; readonly key: string; readonly token: bigint; readonly to: string }
  | { readonly type: 'granted'; readonly key: string; readonly token: bigint }
  /** No progress() within the deadline (`key`: the held key, or the elector's election name). */
  | {
      readonly type: 'stuck';
      readonly key: string;
      readonly token: bigint;
      readonly deadlineMs: number;
    }
  /** fencePrevious ran for the previous leader's token: it succeeded, or the term did not start. */
  | {
      readonly type: 'fence-previous';
      readonly key: string;
      readonly token: bigint;
      readonly previousToken: bigint;
      readonly outcome: 'fenced' | 'failed';
    }
  | { readonly type: 'lost'; readonly key: string; readonly token: bigint; readonly why: string }
  | {
      readonly type: 'released';
      readonly key: string;
      readonly token: bigint;
      readonly deleted: boolean;
    };

export type RecipeTrace = (event: RecipeTraceEvent) => void;
