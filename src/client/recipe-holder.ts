// What a LockGrant and a Leadership have in common: a contender at the head of the queue, holding
// its key until it ends its hold (release, resign) with a fenced delete. Its signal aborts at
// session jeopardy, own-key loss (the KeyGuard that watched the key while queued goes on watching
// it) or the end of the hold, and its `aborted` is read from the monotonic clock at the moment of
// the check (recipe-signal.ts).
import type { QueueOp } from '../core/queue/requests.js';
import type { CallOptions } from './call-options.js';
import { RecipeError } from './recipe-errors.js';
import type { KeyGuard } from './recipe-guard.js';
import { fencedDelete, fencedPut, type Entry, type QueueContext } from './recipe-queue.js';
import { linkAbort, liveSignal, rawAborted } from './recipe-signal.js';
import { unregister } from './recipe-wait.js';
import { compare, type Compare } from './txn.js';
import './dispose.js';

/** Bound on a release or resign, in ms, unless the caller gives timeoutMs. */
export const endTimeoutMsDefault = 5_000;

export abstract class QueueHolder implements AsyncDisposable {
  readonly name: string;
  /** The held key, `name/<lease hex>`. */
  readonly key: string;
  /** The fencing token: the key's create revision. */
  readonly token: bigint;
  readonly leaseId: bigint;
  /** Aborts at session jeopardy, own-key loss or the end of the hold; `aborted` is read now. */
  readonly signal: AbortSignal;
  protected readonly ctx: QueueContext;
  readonly #entry: Entry;
  readonly #guard: KeyGuard;
  readonly #controller = new AbortController();
  readonly #unlink: Array<() => void>;
  #ending: Promise<boolean> | undefined;

  protected constructor(ctx: QueueContext, entry: Entry, guard: KeyGuard) {
    this.name = entry.name;
    this.key = entry.key;
    this.token = entry.token;
    this.leaseId = entry.leaseId;
    this.ctx = ctx;
    this.#entry = entry;
    this.#guard = guard;
    this.#unlink = [
      linkAbort(ctx.session.activeSignal(), this.#controller),
      linkAbort(guard.signal, this.#controller),
    ];
    this.signal = liveSignal(this.#controller, ctx.session);
  }

  /** True while certainly held: not aborted and the session valid, checked now. */
  valid(): boolean {
    return this.ctx.session.valid() && !rawAborted(this.signal);
  }

  /** Whether the hold has begun to end (release or resign called). */
  protected get ending(): boolean {
    return this.#ending !== undefined;
  }

  /** Throws unless held with more than `minRemainingMs` of certain lease left. */
  protected assertHolding(minRemainingMs: number): void {
    this.signal.throwIfAborted();
    this.ctx.session.assertValid(minRemainingMs);
  }

  /** A Txn compare that holds only while this hold's key is the held key (Go's IsOwner()). */
  protected ownsKey(): Compare {
    return compare.createRevision(this.key, '=', this.token);
  }

  /** Abort the signal without touching the key. */
  protected abortHold(reason: RecipeError): void {
    this.#controller.abort(reason);
  }

  /** Put `value` on the key only while it is this hold's; false if it is gone or another's. */
  protected putFenced(value: Buffer, options: CallOptions): Promise<boolean> {
    return fencedPut(this.ctx, this.#entry, value, options);
  }

  /**
   * End the hold: abort the signal with `reason`, then delete the key only if it is still this
   * hold's (one Txn, with `extra`). True if this call deleted it; false if it was already gone
   * (expired, revoked, or deleted by an earlier attempt whose answer was lost). Idempotent; a
   * failed attempt may be retried.
   */
  protected end(
    reason: RecipeError,
    extra: readonly QueueOp[],
    options: CallOptions,
  ): Promise<boolean> {
    this.#ending ??= this.#end(reason, extra, options);
    return this.#ending;
  }

  async #end(
    reason: RecipeError,
    extra: readonly QueueOp[],
    options: CallOptions,
  ): Promise<boolean> {
    this.#controller.abort(reason);
    for (const f of this.#unlink) f();
    await this.#guard.close();
    try {
      const deleted = await fencedDelete(this.ctx, this.#entry, extra, {
        ...options,
        timeoutMs: options.timeoutMs ?? endTimeoutMsDefault,
      });
      this.ctx.trace?.({ type: 'released', key: this.key, token: this.token, deleted });
      unregister(this.ctx.session, this.name);
      return deleted;
    } catch (e) {
      this.#ending = undefined; // allow a retry
      throw e;
    }
  }

  /** The subclass's own end (release, resign) with its defaults. */
  protected abstract endHold(): Promise<boolean>;

  async [Symbol.asyncDispose](): Promise<void> {
    await this.endHold().catch(() => false);
  }
}
