// The FIFO contender queue of Lock and Election, against the cluster: etcd's Mutex/Campaign
// algorithm (client/v3/concurrency mutex.go and election.go, as the v3lock and v3election services
// run it) with fixes for the failures reported against it (issues cited below). The requests and
// the decisions are the ones the server's services use (src/core/queue); this file sends them
// through the client and answers the one wait loop (src/core/queue/turn.ts).
//
//   enqueue     Txn(if create(myKey) == 0 then put(myKey, value, lease) ...): the key's create
//               revision is the fencing token. Retried on an unknown outcome: the Txn is
//               idempotent per lease (a retry finds the key it created and reuses it).
//   waitTurn    Go's waitDeletes: read the last-created key below my token and watch only that
//               key until it is deleted — a release wakes only its successor (no herd). It does
//               not read again after the deletion: verifyHead, which the caller runs next anyway,
//               answers the same question. Meanwhile a KeyGuard (recipe-guard.ts) watches my own
//               key: if it goes (lease expired or revoked, operator delete) the wait aborts at once
//               instead of waiting for the predecessor (etcd #19597, "phantom leader").
//   verifyHead  one Txn: CREATE(myKey) == token AND LEASE(myKey) == myLease AND every key under the
//               prefix was created at or after my token — Curator's ephemeralOwner fix, done
//               atomically on the server before declaring victory.
//   fencedDelete Txn(if CREATE(myKey) == token then delete(myKey), extra ops): release, resign
//               and cleanup never delete a newer key of the same lease (etcd #22082); "compare
//               failed" means already gone, which is success for an idempotent release.
import { assert } from '../core/base/assert.js';
import { enqueued, headOf, type Head } from '../core/queue/decisions.js';
import * as q from '../core/queue/requests.js';
import { awaitTurn, type PredecessorGone, type TurnAnswer } from '../core/queue/turn.js';
import type { CallOptions } from './call-options.js';
import type { Client } from './client.js';
import type { KeyValue } from './codec.js';
import { CompactedError, SessionExpiredError, UnknownOutcomeError } from './errors.js';
import type { RecipeTrace } from './recipe-errors.js';
import { contenderKey, queuePrefix } from './recipe-keys.js';
import { rangeOptions, txnOf } from './recipe-requests.js';
import type { Session } from './session.js';

// Named limits.
/** Attempts of an idempotent Txn whose outcome was unknown (connection lost mid-call). */
export const unknownOutcomeRetriesMax = 5;
/** Bound on a best-effort cleanup delete after a failed acquire, in ms. */
export const cleanupTimeoutMs = 2_000;

/** A contender's place in the queue. */
export interface Entry {
  readonly name: string;
  readonly key: string;
  readonly token: bigint;
  readonly leaseId: bigint;
  /** The same place as the queue's requests and decisions take it. */
  readonly queued: q.QueueEntry;
}

export interface QueueContext {
  readonly client: Client;
  readonly session: Session;
  readonly name: string;
  readonly trace: RecipeTrace | undefined;
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

function prefixOf(ctx: QueueContext): Buffer {
  return Buffer.from(queuePrefix(ctx.name));
}

/** Create (or find) this session's key under the prefix. */
export async function enqueue(
  ctx: QueueContext,
  value: Buffer,
  signal: AbortSignal,
): Promise<Enqueued> {
  const leaseId = ctx.session.leaseId;
  const key = contenderKey(ctx.name, leaseId);
  const bytes = Buffer.from(key);
  for (;;) {
    const r = await idempotent(signal, () =>
      txnOf(ctx.client, q.enqueueTxn(bytes, value, leaseId)).commit({ signal }),
    );
    const first = r.responses[0];
    const existing = !r.succeeded && first?.type === 'range' ? first.kvs[0] : undefined;
    const e = enqueued(leaseId, r.succeeded, r.header.revision, existing);
    if (e.type === 'vanished') continue; // deleted between compare and get: cannot happen; re-try
    if (e.type === 'found' && !e.sameLease) {
      throw new SessionExpiredError(
        'SESSION_EXPIRED',
        `${key} exists but is attached to lease ${e.kv.lease.toString(16)}, not ${leaseId.toString(16)}`,
      );
    }
    const entry: Entry = {
      name: ctx.name,
      key,
      token: e.token,
      leaseId,
      queued: { key: bytes, token: e.token, lease: leaseId },
    };
    ctx.trace?.({ type: 'queued', key, token: entry.token });
    return { entry, existingValue: e.type === 'found' ? e.kv.value : undefined };
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
  const turn = awaitTurn<KeyValue>(entry.queued, prefixOf(ctx), 'guarded');
  for (let step = turn.next(); ;) {
    if (step.done) {
      assert(step.value.type !== 'lost', 'recipe: a guarded wait never reads its own key');
      return step.value.gone;
    }
    const req = step.value;
    if (req.type === 'read') {
      if (signal.aborted) throw signal.reason;
      trace?.({ type: 'read', key, token });
      const p = req.predecessor;
      const r = await client.kv.range(p.key, { ...rangeOptions(p), signal });
      step = turn.next({ type: 'read', revision: r.header.revision, predecessor: r.kvs[0] });
      continue;
    }
    const pred = req.predecessor;
    trace?.({ type: 'watch-predecessor', key, token, predecessor: pred.key.toString() });
    const woke = await predecessorDeletion(client, pred.key, req.fromRevision, signal);
    if (woke.type === 'deleted')
      trace?.({ type: 'wake', key, token, reason: 'predecessor-deleted' });
    if (woke.type === 'compacted') trace?.({ type: 'wake', key, token, reason: 'compacted' });
    step = turn.next(woke);
  }
}

/** The first deletion of `key` from `from` on, a compaction, or the watch's end. */
async function predecessorDeletion(
  client: Client,
  key: Buffer,
  from: bigint,
  signal: AbortSignal,
): Promise<TurnAnswer<KeyValue>> {
  const w = client.watch(key, { startRevision: from, noPut: true, signal });
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
    return deletedAt === undefined ? { type: 'woken' } : { type: 'deleted', revision: deletedAt };
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    if (!(e instanceof CompactedError)) throw e;
    return { type: 'compacted' };
  } finally {
    await w.close();
  }
}

export type HeadCheck = Head;

/**
 * One Txn: my key exists with my token and my lease, and no key under the prefix was created
 * before it. 'not-head' can only follow a wait that was cut short; the caller waits again.
 */
export async function verifyHead(
  ctx: QueueContext,
  entry: Entry,
  signal: AbortSignal,
): Promise<HeadCheck> {
  const r = await txnOf(ctx.client, q.headCheckTxn(prefixOf(ctx), entry.queued)).commit({
    signal,
  });
  const [own] = r.responses;
  return headOf(entry.queued, r.succeeded, own?.type === 'range' ? own.kvs[0] : undefined);
}

/** Commit `txn` (fenced on the own key), retried while the outcome is unknown (it is idempotent). */
async function fencedCommit(
  ctx: QueueContext,
  txn: q.QueueTxn,
  options: CallOptions,
): Promise<boolean> {
  const signal = options.signal ?? new AbortController().signal;
  const r = await idempotent(signal, () => txnOf(ctx.client, txn).commit(options));
  return r.succeeded;
}

/**
 * Delete the own key only if it is still this entry, with `extra` ops in the same Txn. True if
 * this call's Txn deleted it; false if it was already gone (or replaced).
 */
export function fencedDelete(
  ctx: QueueContext,
  entry: Entry,
  extra: readonly q.QueueOp[],
  options: CallOptions,
): Promise<boolean> {
  return fencedCommit(ctx, q.fencedDelete(entry.queued, extra), options);
}

/**
 * Delete the own key only if it is still this entry and still on its lease (registry.ts: a key
 * overwritten by another session keeps its create revision). True if this call's Txn deleted it.
 */
export function leasedFencedDelete(
  ctx: QueueContext,
  entry: Entry,
  options: CallOptions,
): Promise<boolean> {
  return fencedCommit(ctx, q.leasedFencedDelete(entry.queued), options);
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
  return fencedCommit(ctx, q.fencedPut(entry.queued, value, entry.leaseId), options);
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
  const key = Buffer.from(contenderKey(ctx.name, ctx.session.leaseId));
  await txnOf(ctx.client, q.leasedDelete(key, ctx.session.leaseId))
    .commit({ timeoutMs: cleanupTimeoutMs })
    .catch(() => undefined);
}
