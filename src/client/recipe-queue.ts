// The FIFO contender queue shared by Lock and Election: etcd's Mutex/Campaign algorithm
// (client/v3/concurrency mutex.go and election.go, as the v3lock and v3election services run it)
// with fixes for the failures reported against it (issues cited below).
//
//   enqueue     Txn(if create(myKey) == 0 then put(myKey, value, lease) ...): the key's create
//               revision is the fencing token. Retried on an unknown outcome: the Txn is
//               idempotent per lease (a retry finds the key it created and reuses it).
//   waitTurn    Go's waitDeletes: read the last-created key below my token and watch only that
//               key until it is deleted — a release wakes only its successor (no herd). Unlike
//               waitDeletes it does not read again after the deletion: verifyHead, which the
//               caller runs next anyway, answers the same question (is an older key left?), so a
//               hand-off costs one read fewer. Meanwhile a KeyGuard watches my own key: if it goes (lease expired or
//               revoked, operator delete) the wait aborts at once instead of waiting for the
//               predecessor (etcd #19597, "phantom leader").
//   verifyHead  one Txn: CREATE(myKey) == token AND LEASE(myKey) == myLease AND every key under the
//               prefix was created at or after my token — Curator's ephemeralOwner fix, done
//               atomically on the server before declaring victory.
//   fencedDelete Txn(if CREATE(myKey) == token then delete(myKey), extra ops): release, resign
//               and cleanup never delete a newer key of the same lease (etcd #22082); "compare
//               failed" means already gone, which is success for an idempotent release.
import { sleep, type CallOptions } from './call-options.js';
import type { Client } from './client.js';
import {
  CompactedError,
  SessionExpiredError,
  TimeoutError,
  UnknownOutcomeError,
} from './errors.js';
import type { PredecessorGone } from './recipe-keys.js';
import { contenderKey, queuePrefix } from './recipe-keys.js';
import { linkAbort } from './recipe-signal.js';
import type { Session } from './session.js';
import { compare, op, type Op } from './txn.js';

/** Why a holder's signal aborted or a recipe call failed, besides the session's own errors. */
export type RecipeErrorCode =
  /** The own key was deleted or replaced (lease revoked or expired, operator delete). */
  | 'KEY_DELETED'
  /** The holder released the lock. */
  | 'RELEASED'
  /** The leader resigned. */
  | 'RESIGNED'
  /** The leader handed leadership to a chosen successor. */
  | 'HANDED_OFF'
  /** The elector was stopped. */
  | 'STOPPED'
  /** Proclaim or a fenced write found that this contender no longer leads. */
  | 'NOT_LEADER'
  /** The same session already queues for (or holds) this name in this process. */
  | 'ALREADY_QUEUED';

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
  | { readonly type: 'lost'; readonly key: string; readonly token: bigint; readonly why: string }
  | {
      readonly type: 'released';
      readonly key: string;
      readonly token: bigint;
      readonly deleted: boolean;
    };

export type RecipeTrace = (event: RecipeTraceEvent) => void;

// Named limits.
/** Attempts of an idempotent Txn whose outcome was unknown (connection lost mid-call). */
export const unknownOutcomeRetriesMax = 5;
/** Pause before re-reading after a watch failure that was not a compaction, in ms. */
const watchRetryPauseMs = 100;
/** Bound on a best-effort cleanup delete after a failed acquire, in ms. */
export const cleanupTimeoutMs = 2_000;

/** A contender's place in the queue. */
export interface Entry {
  readonly name: string;
  readonly key: string;
  readonly token: bigint;
  readonly leaseId: bigint;
}

export interface QueueContext {
  readonly client: Client;
  readonly session: Session;
  readonly name: string;
  readonly trace: RecipeTrace | undefined;
}

/**
 * The caller's signal plus an optional deadline, for calls that may wait a long time (acquire,
 * campaign): without `timeoutMs` they wait until the signal aborts or the session dies.
 */
export class WaitScope {
  readonly #controller = new AbortController();
  readonly #cleanup: Array<() => void> = [];
  readonly signal: AbortSignal = this.#controller.signal;

  constructor(options: CallOptions, what: string) {
    if (options.signal !== undefined)
      this.#cleanup.push(linkAbort(options.signal, this.#controller));
    if (options.timeoutMs !== undefined && !this.signal.aborted) {
      const ms = options.timeoutMs;
      const t = setTimeout(
        () =>
          this.#controller.abort(new TimeoutError('TIMEOUT', `${what}: timed out after ${ms} ms`)),
        ms,
      );
      this.#cleanup.push(() => clearTimeout(t));
    }
  }

  /** Also abort when `signal` does. */
  link(signal: AbortSignal): void {
    this.#cleanup.push(linkAbort(signal, this.#controller));
  }

  abort(reason: unknown): void {
    this.#controller.abort(reason);
  }

  dispose(): void {
    for (const f of this.#cleanup.splice(0)) f();
  }
}

/** Run an idempotent write, retrying when its outcome is unknown. */
export async function idempotent<T>(signal: AbortSignal, f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof UnknownOutcomeError) || attempt >= unknownOutcomeRetriesMax) throw e;
      if (signal.aborted) throw signal.reason;
    }
  }
}

/** The result of enqueue. */
export interface Enqueued {
  readonly entry: Entry;
  /** The key existed already (same lease): its value, so a campaign can proclaim a new one. */
  readonly existingValue: Buffer | undefined;
}

/** Create (or find) this session's key under the prefix. */
export async function enqueue(
  ctx: QueueContext,
  value: Buffer,
  signal: AbortSignal,
): Promise<Enqueued> {
  const leaseId = ctx.session.leaseId;
  const key = contenderKey(ctx.name, leaseId);
  for (;;) {
    const r = await idempotent(signal, () =>
      ctx.client.kv
        .txn()
        .if(compare.createRevision(key, '=', 0n))
        .then(op.put(key, value, { lease: leaseId }))
        .else(op.get(key))
        .commit({ signal }),
    );
    let entry: Entry;
    let existingValue: Buffer | undefined;
    if (r.succeeded) {
      entry = { name: ctx.name, key, token: r.header.revision, leaseId };
    } else {
      const first = r.responses[0];
      const kv = first?.type === 'range' ? first.kvs[0] : undefined;
      if (kv === undefined) continue; // deleted between compare and get: cannot happen; re-try
      if (kv.lease !== leaseId) {
        throw new SessionExpiredError(
          'SESSION_EXPIRED',
          `${key} exists but is attached to lease ${kv.lease.toString(16)}, not ${leaseId.toString(16)}`,
        );
      }
      entry = { name: ctx.name, key, token: kv.createRevision, leaseId };
      existingValue = kv.value;
    }
    ctx.trace?.({ type: 'queued', key, token: entry.token });
    return { entry, existingValue };
  }
}

/**
 * Watches a contender's own key from its creation on, and aborts `signal` (KEY_DELETED) when the
 * key is deleted or re-created (a different create revision). Compaction is handled by
 * re-reading the key. Used while queued and while holding.
 */
export class KeyGuard {
  readonly #controller = new AbortController();
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  readonly signal: AbortSignal = this.#controller.signal;

  constructor(
    readonly ctx: QueueContext,
    readonly entry: Entry,
  ) {
    // A client closed without a release: the key can no longer be watched, so ownership can no
    // longer be confirmed. The holder must stop at once, and so must this loop (it once retried
    // for ever on a closed client and kept a test process alive for 15 minutes).
    const closing = ctx.client.closingSignal;
    const onClosing = (): void => {
      this.#lose('unobservable: the client was closed', closing.reason as Error);
      this.#stop.abort(closing.reason);
    };
    if (closing.aborted) onClosing();
    else closing.addEventListener('abort', onClosing, { once: true });
    this.#done = this.#run().finally(() => closing.removeEventListener('abort', onClosing));
  }

  async #run(): Promise<void> {
    const { client } = this.ctx;
    const { key, token } = this.entry;
    const stop = this.#stop.signal;
    let from = token + 1n;
    while (!stop.aborted) {
      const w = client.watch(key, { startRevision: from, noPut: true, signal: stop });
      try {
        for await (const b of w) {
          if (b.events.some((e) => e.type === 'delete')) {
            this.#lose('deleted');
            return;
          }
        }
        if (stop.aborted) return;
      } catch (e) {
        if (stop.aborted) return;
        if (!(e instanceof CompactedError)) await sleep(watchRetryPauseMs, stop).catch(() => {});
      } finally {
        await w.close();
      }
      // Compaction (or a failed watch): the key's state now tells what we missed.
      try {
        const r = await client.kv.range(key, { signal: stop });
        const kv = r.kvs[0];
        if (kv === undefined || kv.createRevision !== token) {
          this.#lose(kv === undefined ? 'deleted' : 're-created');
          return;
        }
        from = r.header.revision + 1n;
      } catch {
        await sleep(watchRetryPauseMs, stop).catch(() => {});
      }
    }
  }

  /** `reason` replaces the KEY_DELETED error when the key's fate is unknown (client closed). */
  #lose(why: string, reason?: Error): void {
    if (this.#stop.signal.aborted) return; // closed by its owner (release, resign) meanwhile
    const { key, token } = this.entry;
    this.ctx.trace?.({ type: 'lost', key, token, why: `own key ${why}` });
    this.#controller.abort(
      reason ??
        new RecipeError('KEY_DELETED', `${key} (token ${token}) was ${why}: ownership lost`),
    );
  }

  /** Stop watching (idempotent). */
  async close(): Promise<void> {
    this.#stop.abort(new Error('guard closed'));
    await this.#done;
  }
}

/**
 * Wait until the newest key created before mine is deleted, or return at once when there is none.
 * Returns what is known about the deletion that ended the wait (for lock-delay), or undefined if
 * there was nothing to wait for. An older key may still remain: the caller's verifyHead says
 * 'not-head' then, and it waits again.
 */
export async function waitTurn(
  ctx: QueueContext,
  entry: Entry,
  signal: AbortSignal,
): Promise<PredecessorGone | undefined> {
  const { client, trace } = ctx;
  const { key, token } = entry;
  let gone: PredecessorGone | undefined;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    trace?.({ type: 'read', key, token });
    const r = await client.kv.range(queuePrefix(ctx.name), {
      prefix: true,
      sortTarget: 'create',
      sortOrder: 'descend',
      limit: 1,
      maxCreateRevision: token - 1n,
      signal,
    });
    const pred = r.kvs[0];
    if (pred === undefined) return gone;
    const predKey = pred.key.toString();
    trace?.({ type: 'watch-predecessor', key, token, predecessor: predKey });
    const w = client.watch(pred.key, {
      startRevision: r.header.revision + 1n,
      noPut: true,
      signal,
    });
    try {
      let deletedAt: bigint | undefined;
      for await (const b of w) {
        const d = b.events.find((e) => e.type === 'delete');
        if (d !== undefined) {
          deletedAt = d.kv.modRevision;
          break;
        }
      }
      if (signal.aborted) throw signal.reason;
      if (deletedAt !== undefined) {
        trace?.({ type: 'wake', key, token, reason: 'predecessor-deleted' });
        return { token: pred.createRevision, deleteRevision: deletedAt };
      }
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      if (!(e instanceof CompactedError)) throw e;
      trace?.({ type: 'wake', key, token, reason: 'compacted' });
      // The predecessor may have gone meanwhile; its deletion is then unknown (lock-delay applies).
      gone = { token: pred.createRevision, deleteRevision: 0n };
    } finally {
      await w.close();
    }
  }
}

export type HeadCheck = 'head' | 'lost' | 'not-head';

/**
 * One Txn: my key exists with my token and my lease, and no key under the prefix was created
 * before it. 'not-head' can only follow a wait that was cut short; the caller waits again.
 */
export async function verifyHead(
  ctx: QueueContext,
  entry: Entry,
  signal: AbortSignal,
): Promise<HeadCheck> {
  const pfx = queuePrefix(ctx.name);
  const r = await ctx.client.kv
    .txn()
    .if(
      compare.createRevision(entry.key, '=', entry.token),
      compare.lease(entry.key, '=', entry.leaseId),
      compare.createRevision(pfx, '>', entry.token - 1n, { prefix: true }),
    )
    .else(op.get(entry.key))
    .commit({ signal });
  if (r.succeeded) return 'head';
  const [own] = r.responses;
  const kv = own?.type === 'range' ? own.kvs[0] : undefined;
  if (kv === undefined || kv.createRevision !== entry.token || kv.lease !== entry.leaseId) {
    return 'lost';
  }
  // Our key is intact, so the compare that failed is the one on the prefix: an older key is
  // queued (all three were read in one revision). Never guess victory.
  return 'not-head';
}

/**
 * Run `ops` in one Txn only if the own key is still this entry (create revision), retried while
 * the outcome is unknown (the Txn is idempotent). True if this call's Txn ran them.
 */
async function fencedTxn(
  ctx: QueueContext,
  entry: Entry,
  ops: readonly Op[],
  options: CallOptions,
): Promise<boolean> {
  const signal = options.signal ?? new AbortController().signal;
  const r = await idempotent(signal, () =>
    ctx.client.kv
      .txn()
      .if(compare.createRevision(entry.key, '=', entry.token))
      .then(...ops)
      .commit(options),
  );
  return r.succeeded;
}

/**
 * Delete the own key only if it is still this entry, with `extra` ops in the same Txn. True if
 * this call's Txn deleted it; false if it was already gone (or replaced).
 */
export function fencedDelete(
  ctx: QueueContext,
  entry: Entry,
  extra: readonly Op[],
  options: CallOptions,
): Promise<boolean> {
  return fencedTxn(ctx, entry, [op.delete(entry.key), ...extra], options);
}

/**
 * Put `value` on the own key (keeping its lease) only if it is still this entry. True if this
 * call's Txn wrote it; false if the key is gone or is another entry's.
 */
export function fencedPut(
  ctx: QueueContext,
  entry: Entry,
  value: Buffer,
  options: CallOptions,
): Promise<boolean> {
  return fencedTxn(ctx, entry, [op.put(entry.key, value, { lease: entry.leaseId })], options);
}

/** Best-effort removal of a contender key after a failed or cancelled wait (etcd #21128). */
export async function cleanup(ctx: QueueContext, entry: Entry): Promise<void> {
  await fencedDelete(ctx, entry, [], { timeoutMs: cleanupTimeoutMs }).catch(() => false);
}

/**
 * Clean up after a call that failed before it knew its entry (aborted or timed out while its
 * enqueue Txn was in flight, which may have applied): delete our key if it is on our lease.
 * Safe because this process queues one key per (lease, name) at a time (`register`), and
 * processes that share a lease share ownership, as in Go's concurrency package.
 */
export async function cleanupUnknown(ctx: QueueContext): Promise<void> {
  const key = contenderKey(ctx.name, ctx.session.leaseId);
  await ctx.client.kv
    .txn()
    .if(compare.lease(key, '=', ctx.session.leaseId))
    .then(op.delete(key))
    .commit({ timeoutMs: cleanupTimeoutMs })
    .catch(() => undefined);
}

/**
 * Resolves once the session is valid (now or after recovering from jeopardy); rejects when it
 * expires first or `signal` aborts.
 */
export function untilValid(session: Session, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (session.valid()) {
      resolve();
      return;
    }
    if (session.phase === 'expired') {
      reject(new SessionExpiredError('SESSION_EXPIRED', 'session expired'));
      return;
    }
    const done = (): void => {
      session.off('active', onActive);
      session.off('expired', onExpired);
      signal.removeEventListener('abort', onAbort);
    };
    const onActive = (): void => {
      done();
      resolve();
    };
    const onExpired = (): void => {
      done();
      reject(new SessionExpiredError('SESSION_EXPIRED', 'session expired'));
    };
    const onAbort = (): void => {
      done();
      reject(signal.reason as Error);
    };
    session.on('active', onActive);
    session.on('expired', onExpired);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** An AbortSignal that aborts when the session expires (not on jeopardy, which may recover). */
export function expirySignal(session: Session): { signal: AbortSignal; dispose(): void } {
  const c = new AbortController();
  const on = (): void =>
    c.abort(new SessionExpiredError('SESSION_EXPIRED', 'session expired while waiting'));
  if (session.phase === 'expired') on();
  else session.once('expired', on);
  return { signal: c.signal, dispose: () => session.off('expired', on) };
}

/**
 * Process-wide guard: one queue entry per (lease, name) at a time in this process. Keyed by the
 * lease, not the Session object: two sessions on one lease would share one key (etcd's layout)
 * and both believe they hold it.
 */
const queued = new Map<bigint, Set<string>>();

export function register(session: Session, name: string): void {
  let names = queued.get(session.leaseId);
  if (names === undefined) queued.set(session.leaseId, (names = new Set()));
  if (names.has(name)) {
    throw new RecipeError(
      'ALREADY_QUEUED',
      `session ${session.leaseId.toString(16)} already queues for or holds "${name}": ` +
        'one session has one key per name (etcd layout), so use another session',
    );
  }
  names.add(name);
}

export function unregister(session: Session, name: string): void {
  const names = queued.get(session.leaseId);
  names?.delete(name);
  if (names?.size === 0) queued.delete(session.leaseId);
}
