// Lock: a fair, fenced mutual-exclusion lock on etcd's key layout, safe where etcd's Mutex and
// etcd3's Lock are not:
//
// - Interoperable: contenders are `name/<lease hex>` keys, so it queues with `etcdctl lock name`,
//   Go's concurrency.Mutex and the v3lock service on the same name (recipe-keys.ts).
// - Fair and herd-free: FIFO by create revision; a waiter watches only its predecessor
//   (recipe-queue.ts waitTurn).
// - Fenced: the grant carries `token`, the key's create revision, which strictly increases across
//   successive holders. Pass it to every resource you touch and have the resource reject smaller
//   tokens (`tokenAdmits`); for etcd keys use `grant.isOwner()` as a Txn compare.
// - Session-aware: waiting aborts when the own key disappears or the session expires; victory is
//   declared only after one Txn confirms key, token and lease, and only while `session.valid()`.
//   While holding, `grant.signal` aborts at session jeopardy, own-key loss or release, and its
//   `aborted` is read from the monotonic clock at the moment of the check (recipe-signal.ts).
// - Released by a fenced Txn (idempotent; never deletes a newer key of the same lease).
// - Optional lock-delay (Chubby §2.4): a waiter whose predecessor vanished without a clean
//   release waits `lockDelayMs` before taking the lock (recipe-keys.ts lockDelayMsFor).
//
// - Optional progress deadline (`run(fn, { progressDeadlineMs })`, docs/stuck-leaders.md): a
//   critical section that does not call `progress()` within the deadline is STUCK: its signal
//   aborts with RecipeError STUCK and the session stops renewing (Session.abandon), so the lease
//   runs out on the server and the next waiter gets the lock; the stuck holder never releases
//   while `fn` may still run.
//
//   const lock = new Lock(client, session, 'jobs/nightly');
//   await lock.run(async ({ signal, token }) => {
//     await db.query('UPDATE jobs SET ... WHERE fence <= $1', [token], { signal });
//   });
import type { CallOptions } from './call-options.js';
import type { Client } from './client.js';
import { sleep } from './call-options.js';
import { contend, type Contention } from './recipe-contend.js';
import { RecipeError, type RecipeTrace } from './recipe-errors.js';
import type { KeyGuard } from './recipe-guard.js';
import { QueueHolder } from './recipe-holder.js';
import { lockDelayMsFor, releaseMarkerKey } from './recipe-keys.js';
import type { Entry, QueueContext } from './recipe-queue.js';
import { checkProgressDeadline, runHold } from './recipe-run.js';
import type { Session } from './session.js';
import type { Compare } from './txn.js';
import './dispose.js';

export interface LockOptions {
  /**
   * After a predecessor disappeared without a clean release (crash, lease expiry, revoke, or a
   * foreign client such as etcdctl, which writes no marker), wait this long before taking the
   * lock, in ms, so that the dead holder's delayed writes drain first (Chubby's lock-delay;
   * Consul defaults to 15 s). Default 0 (off). It protects waiters already queued when the holder
   * failed; a contender that arrives after the dead holder's key is gone is not delayed.
   */
  readonly lockDelayMs?: number;
  /**
   * Write the clean-release marker `name.released` (= the token) in the release Txn, so that
   * waiters using lock-delay know the release was clean. One small key per lock name, outside the
   * queue prefix, overwritten by each release. Default true; turn off only if no contender uses
   * lock-delay.
   */
  readonly releaseMarker?: boolean;
  /** Events for metrics and tests (queued, read, wake, granted, lost, released). */
  readonly trace?: RecipeTrace;
}

/** What a critical section gets from `lock.run`. */
export interface LockContext {
  /** Aborts at session jeopardy, own-key loss or release; `aborted` is computed when read. */
  readonly signal: AbortSignal;
  /** The fencing token: the lock key's create revision. */
  readonly token: bigint;
  readonly grant: LockGrant;
  /** Report progress: restarts the progressDeadlineMs count (a no-op without a deadline). */
  readonly progress: () => void;
}

export interface LockRunOptions extends CallOptions {
  /**
   * The longest the critical section may go without calling `progress()`, in ms, counted from
   * the grant and then from each call; past it the holder is STUCK (see the file comment). The
   * session given to the Lock is abandoned: every hold on it is lost at its expiry. Default: none.
   */
  readonly progressDeadlineMs?: number;
}

export class Lock {
  readonly name: string;
  readonly #ctx: QueueContext;
  readonly #lockDelayMs: number;
  readonly #releaseMarker: boolean;

  constructor(client: Client, session: Session, name: string, options: LockOptions = {}) {
    const lockDelayMs = options.lockDelayMs ?? 0;
    if (!(lockDelayMs >= 0)) throw new RangeError('Lock: lockDelayMs must be ≥ 0');
    this.name = name;
    this.#ctx = { client, session, name, trace: options.trace };
    this.#lockDelayMs = lockDelayMs;
    this.#releaseMarker = options.releaseMarker ?? true;
  }

  get session(): Session {
    return this.#ctx.session;
  }

  /**
   * Wait for the lock. Without `timeoutMs` it waits until granted, the signal aborts, the own key
   * is deleted (RecipeError KEY_DELETED) or the session expires (SessionExpiredError). On any
   * failure the own key is removed (fenced).
   */
  async acquire(options: CallOptions = {}): Promise<LockGrant> {
    return (await this.#acquire(options, false)) as LockGrant;
  }

  /** Take the lock if it is free now; undefined (and no key left behind) if not. */
  async tryAcquire(options: CallOptions = {}): Promise<LockGrant | undefined> {
    return this.#acquire(options, true);
  }

  /**
   * Acquire, run `fn`, and release once `fn` has settled (even if the signal aborted first: the
   * release waits for the critical section, never the other way round). `fn`'s error is rethrown;
   * a release error is thrown only if `fn` succeeded. With `progressDeadlineMs`, a STUCK `fn` is
   * not released until it settles (it may never settle; then neither does run()).
   */
  async run<T>(fn: (ctx: LockContext) => Promise<T> | T, options: LockRunOptions = {}): Promise<T> {
    const { progressDeadlineMs, ...call } = options;
    checkProgressDeadline('Lock.run', progressDeadlineMs);
    const grant = await this.acquire(call);
    const trace = this.#ctx.trace;
    return runHold(
      grant,
      this.#ctx.session,
      grant.key,
      progressDeadlineMs,
      (deadlineMs) => trace?.({ type: 'stuck', key: grant.key, token: grant.token, deadlineMs }),
      (progress) => fn({ signal: grant.signal, token: grant.token, grant, progress }),
    );
  }

  #acquire(options: CallOptions, once: boolean): Promise<LockGrant | undefined> {
    const ctx = this.#ctx;
    const c: Contention<LockGrant> = {
      label: `lock ${this.name}`,
      while: 'waiting',
      value: Buffer.alloc(0),
      once,
      grant: (entry, guard) => new LockGrant(ctx, entry, guard, this.#releaseMarker),
    };
    if (this.#lockDelayMs === 0) return contend(ctx, options, c);
    // Lock-delay counts from the deletion of the last key ahead of us (the holder's, or whoever
    // went last), known only once nothing older is left: then sleep and check again.
    return contend(ctx, options, {
      ...c,
      atHead: async (entry, gone, signal) => {
        const marker = await ctx.client.kv.get(releaseMarkerKey(this.name), { signal });
        const ms = lockDelayMsFor(this.#lockDelayMs, gone, marker);
        if (ms === 0) return 'go-on';
        ctx.trace?.({ type: 'lock-delay', key: entry.key, token: entry.token, ms });
        await sleep(ms, signal);
        return 'wait-again';
      },
    });
  }
}

/** A held lock. Release it (or `await using` it); its signal tells when it is no longer safe. */
export class LockGrant extends QueueHolder {
  readonly #releaseMarker: boolean;

  constructor(ctx: QueueContext, entry: Entry, guard: KeyGuard, releaseMarker: boolean) {
    super(ctx, entry, guard);
    this.#releaseMarker = releaseMarker;
  }

  /** Milliseconds of certain lease left while held; 0 when not valid. */
  remainingMs(): number {
    return this.valid() ? this.ctx.session.remainingMs() : 0;
  }

  /** Throws unless held with more than `minRemainingMs` of certain lease left. */
  assertHeld(minRemainingMs = 0): void {
    this.assertHolding(minRemainingMs);
  }

  /** Abort the signal with `reason` without touching the key (the key stays until released). */
  abort(reason: RecipeError): void {
    this.abortHold(reason);
  }

  /** A Txn compare that holds only while this grant's key is the lock key (Go's IsOwner()). */
  isOwner(): Compare {
    return this.ownsKey();
  }

  /**
   * Release: abort the signal, then delete the key only if it is still this grant's (one Txn,
   * with the clean-release marker). True if this call deleted it; false if it was already gone
   * (expired, revoked, or deleted by an earlier attempt whose answer was lost). Idempotent.
   */
  release(options: CallOptions = {}): Promise<boolean> {
    const marker = this.#releaseMarker
      ? [
          {
            type: 'put' as const,
            key: Buffer.from(releaseMarkerKey(this.name)),
            value: Buffer.from(this.token.toString()),
          },
        ]
      : [];
    return this.end(new RecipeError('RELEASED', `${this.key}: released`), marker, options);
  }

  protected endHold(): Promise<boolean> {
    return this.release();
  }
}
