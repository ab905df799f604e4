// PgLock: the SDK Lock's shape (acquire, tryAcquire, run; a grant with token, signal, valid(),
// release()) on the lease table. Mutual exclusion rests on the database alone: a grant exists
// only when the one take statement (sql.ts) returned the row, which it does only if the previous
// holder released it or its session had expired by the database's clock. The holder's signal
// aborts at session jeopardy or expiry (the session's deadline is earlier than the database's
// expiry, session-state.ts) or at release, and its `aborted` is read from the monotonic clock at
// the moment of the check (recipe-signal.ts), so a holder resumed after SIGSTOP sees the loss
// first thing.
//
//   const lock = pg.lock(session, 'jobs/nightly');
//   await lock.run(async ({ token, grant }) => {
//     await leasedTransaction(pool, grant, (db) => db.query('UPDATE jobs SET ...'));
//   });
import type { CallOptions } from '../client/call-options.js';
import { RecipeError } from '../client/recipe-errors.js';
import { linkAbort, liveSignal, rawAborted } from '../client/recipe-signal.js';
import { checkProgressDeadline, runHold } from '../client/recipe-run.js';
import type { Session } from '../client/session.js';
import '../client/dispose.js';
import { releaseRow, claim, take, type PgTrace, type TakeRequest, type Taken } from './take.js';
import { lockRow } from './sql.js';
import type { PgContext } from './context.js';

/** Bound on a release, in ms, unless the caller gives timeoutMs. */
export const releaseTimeoutMsDefault = 5_000;

export interface PgLockContext {
  readonly signal: AbortSignal;
  readonly token: bigint;
  readonly grant: PgLockGrant;
  /** Report progress: restarts the progressDeadlineMs count (a no-op without a deadline). */
  readonly progress: () => void;
}

export interface PgLockRunOptions extends CallOptions {
  /**
   * The longest the critical section may go without calling `progress()`, in ms, counted from
   * the grant and then from each call; past it the holder is STUCK (docs/stuck-leaders.md): its
   * signal aborts, the session given to the lock stops renewing so the session row expires by
   * the database clock and the next waiter takes the row, and the section is not released while
   * it may still run. Default: none.
   */
  readonly progressDeadlineMs?: number;
}

/** A row held by a session: what a PgLockGrant and a PgLeadership share. */
export class PgHold implements AsyncDisposable {
  /** The lock or election name. */
  readonly name: string;
  /** The table row (`lock/<name>`, `elect/<name>`). */
  readonly row: string;
  /** The fencing token: larger than every earlier holder's of this row. */
  readonly token: bigint;
  readonly session: Session;
  /** Aborts at session jeopardy or expiry, or at release; `aborted` is read now. */
  readonly signal: AbortSignal;
  protected readonly ctx: PgContext;
  readonly #controller = new AbortController();
  readonly #unlink: () => void;
  readonly #unclaim: () => void;
  #ending: Promise<boolean> | undefined;

  constructor(
    ctx: PgContext,
    name: string,
    row: string,
    session: Session,
    token: bigint,
    unclaim: () => void,
  ) {
    this.ctx = ctx;
    this.name = name;
    this.row = row;
    this.session = session;
    this.token = token;
    this.#unclaim = unclaim;
    this.#unlink = linkAbort(session.activeSignal(), this.#controller);
    this.signal = liveSignal(this.#controller, session);
  }

  /** True while certainly held: not aborted and the session valid, checked now. */
  valid(): boolean {
    return this.session.valid() && !rawAborted(this.signal);
  }

  /** Milliseconds of certain lease left while held; 0 when not valid. */
  remainingMs(): number {
    return this.valid() ? this.session.remainingMs() : 0;
  }

  /** Throws unless held with more than `minRemainingMs` of certain lease left. */
  assertHeld(minRemainingMs = 0): void {
    this.signal.throwIfAborted();
    this.session.assertValid(minRemainingMs);
  }

  /** End the hold locally (the signal aborts with `reason`); release still frees the row. */
  abort(reason: RecipeError): void {
    this.#controller.abort(reason);
  }

  /**
   * Abort the signal, then free the row only if it still carries this token (one UPDATE, which
   * notifies the waiters). True if this call freed it; false if another holder has it. A failed
   * attempt may be retried.
   */
  protected end(reason: RecipeError, options: CallOptions): Promise<boolean> {
    this.#ending ??= this.#end(reason, options);
    return this.#ending;
  }

  async #end(reason: RecipeError, options: CallOptions): Promise<boolean> {
    this.#controller.abort(reason);
    this.#unlink();
    try {
      const freed = await releaseRow(this.ctx.db, this.row, this.session, this.token, {
        ...options,
        timeoutMs: options.timeoutMs ?? releaseTimeoutMsDefault,
      });
      this.#unclaim();
      return freed;
    } catch (e) {
      this.#ending = undefined;
      throw e;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.end(new RecipeError('RELEASED', `${this.row}: released`), {}).catch(() => false);
  }
}

export class PgLockGrant extends PgHold {
  /** Release (idempotent): true if this call freed the row, false if it was already taken over. */
  release(options: CallOptions = {}): Promise<boolean> {
    return this.end(new RecipeError('RELEASED', `${this.row}: released`), options);
  }
}

export interface PgLockOptions {
  /** Re-check a held lock at least this often while waiting, in ms; default the backend's. */
  readonly pollIntervalMs?: number;
  /** Waiter events (held, woken by notify or poll, granted), for tests and metrics. */
  readonly trace?: PgTrace;
}

export class PgLock {
  readonly name: string;
  readonly session: Session;
  readonly #ctx: PgContext;
  readonly #pollIntervalMs: number;
  readonly #trace: PgTrace | undefined;

  constructor(ctx: PgContext, session: Session, name: string, options: PgLockOptions = {}) {
    this.#ctx = ctx;
    this.#trace = options.trace;
    this.session = session;
    this.name = name;
    this.#pollIntervalMs = options.pollIntervalMs ?? ctx.pollIntervalMs;
    if (!(this.#pollIntervalMs > 0)) throw new RangeError('PgLock: pollIntervalMs must be > 0');
  }

  /**
   * Wait for the lock: until granted, the signal aborts, `timeoutMs` passes (TimeoutError) or the
   * session expires (SessionExpiredError). A session in jeopardy takes nothing: the wait ends
   * with SessionJeopardyError at its next try (a grant needs a valid session at the moment of
   * the take). Throws RecipeError ALREADY_QUEUED if this session already holds or waits for this
   * lock in this process.
   */
  async acquire(options: CallOptions = {}): Promise<PgLockGrant> {
    return (await this.#acquire(options, false)) as PgLockGrant;
  }

  /** Take the lock if it is free now; undefined if not. */
  tryAcquire(options: CallOptions = {}): Promise<PgLockGrant | undefined> {
    return this.#acquire(options, true);
  }

  /**
   * Acquire, run `fn`, and release once `fn` has settled. `fn`'s error is rethrown; a release
   * error is thrown only if `fn` succeeded.
   */
  async run<T>(
    fn: (ctx: PgLockContext) => Promise<T> | T,
    options: PgLockRunOptions = {},
  ): Promise<T> {
    const { progressDeadlineMs, ...call } = options;
    checkProgressDeadline('PgLock.run', progressDeadlineMs);
    const grant = await this.acquire(call);
    const trace = this.#trace;
    return runHold(
      grant,
      this.session,
      grant.row,
      progressDeadlineMs,
      (deadlineMs) => trace?.({ type: 'stuck', row: grant.row, token: grant.token, deadlineMs }),
      (progress) => fn({ signal: grant.signal, token: grant.token, grant, progress }),
    );
  }

  async #acquire(options: CallOptions, once: boolean): Promise<PgLockGrant | undefined> {
    const row = lockRow(this.name);
    const unclaim = claim(this.session, row);
    let taken: Taken | undefined;
    try {
      const req: TakeRequest = {
        db: this.#ctx.db,
        listener: this.#ctx.listener,
        row,
        session: this.session,
        value: null,
        pollIntervalMs: this.#pollIntervalMs,
        closing: this.#ctx.closing,
        once,
        trace: this.#trace,
      };
      taken = await take(req, options);
    } finally {
      if (taken === undefined) unclaim();
    }
    if (taken === undefined) return undefined;
    return new PgLockGrant(this.#ctx, this.name, row, this.session, taken.token, unclaim);
  }
}
