// The queue wait, written once: etcd's `waitDeletes` (client/v3/concurrency/key.go), which waits
// only for the immediate predecessor so that a release wakes exactly one waiter (no thundering
// herd). It is a generator of requests: the server's services drive it against the member's
// applied state (src/server/api/wait-deletes.ts), the SDK against its gRPC client
// (src/client/recipe-queue.ts waitTurn); each answers a `read` with one read at one revision and a
// `watch` with the first answer of a watch opened at the read's revision + 1, so that nothing
// applied in between is missed.
//
// With `own: 'read'` (the server) each read also reads the waiter's own key and each watch
// watches it, so a waiter whose lease expires (or whose key is deleted) while queued learns it at
// once instead of when its predecessor goes (#19597; etcd's Mutex.Lock carries a TODO for this
// "early termination"), and the turn is declared from one read that sees, at one revision, both
// that no older key is left and that the own key is still the one it queued with (#11456).
// With `own: 'guarded'` (the SDK) a KeyGuard watches the own key and the head check's Txn
// (requests.ts headCheckTxn) declares the turn, so the wait returns as soon as the predecessor is
// deleted: the head check answers the question a read would (is an older key left?) and a
// hand-off costs one read fewer.
//
// The passes are bounded: later keys get larger create revisions, so the set of keys older than
// the waiter's only shrinks, and each pass ends when one of them (or the own key) goes.
import { assert } from '../base/assert.js';
import { standingOf, type QueueKv } from './decisions.js';
import { predecessorRange, type QueueEntry, type QueueRange } from './requests.js';

/** What a waiter knows about the deletion that moved it up the queue (the SDK's lock-delay). */
export interface PredecessorGone {
  /** The deleted key's create revision (its holder's token). */
  readonly token: bigint;
  /** The revision of the delete; 0 when a compaction hid it. */
  readonly deleteRevision: bigint;
}

export type OwnKey = 'read' | 'guarded';

export type TurnRequest<K extends QueueKv> =
  /** Read, at one revision, the predecessor and (unless guarded) the own key. */
  | { readonly type: 'read'; readonly predecessor: QueueRange; readonly own?: QueueRange }
  /** Watch `keys`' deletions from `fromRevision`; answer the first thing the watch reports. */
  | {
      readonly type: 'watch';
      readonly predecessor: K;
      readonly keys: readonly Uint8Array[];
      readonly fromRevision: bigint;
    };

export type TurnAnswer<K extends QueueKv> =
  | {
      readonly type: 'read';
      readonly revision: bigint;
      readonly predecessor: K | undefined;
      /** The own key, when the request asked for it. */
      readonly own?: QueueKv | undefined;
    }
  /** The predecessor was deleted at `revision`. */
  | { readonly type: 'deleted'; readonly revision: bigint }
  /** The watch was cancelled by a compaction: what happened meanwhile is unknown. */
  | { readonly type: 'compacted' }
  /** Anything else the watch reported (the own key's deletion, or it ended): read again. */
  | { readonly type: 'woken' };

export type TurnOutcome =
  /** The own key is gone, or was deleted and created again (another incarnation). */
  | { readonly type: 'lost' }
  /** At `revision` no older key was left (and, unless guarded, the own key was intact). */
  | {
      readonly type: 'first';
      readonly revision: bigint;
      readonly gone: PredecessorGone | undefined;
    }
  /** Guarded only: the predecessor was deleted; the head check tells whether another is left. */
  | { readonly type: 'moved-up'; readonly gone: PredecessorGone };

/** Wait until `entry` is the oldest key under `prefix` (see the top of the file). */
export function* awaitTurn<K extends QueueKv>(
  entry: Pick<QueueEntry, 'key' | 'token'>,
  prefix: Uint8Array,
  own: OwnKey,
): Generator<TurnRequest<K>, TurnOutcome, TurnAnswer<K>> {
  let gone: PredecessorGone | undefined;
  for (;;) {
    const predecessor = predecessorRange(prefix, entry.token);
    const seen = yield own === 'read'
      ? { type: 'read', own: { key: entry.key }, predecessor }
      : { type: 'read', predecessor };
    assert(seen.type === 'read', () => `queue: a read answered with ${seen.type}`);
    const standing = standingOf(entry, own === 'read' ? seen.own : 'guarded', seen.predecessor);
    if (standing.type === 'lost') return { type: 'lost' };
    if (standing.type === 'first') return { type: 'first', revision: seen.revision, gone };
    const pred = standing.predecessor;
    const woke = yield {
      type: 'watch',
      predecessor: pred,
      keys: own === 'read' ? [pred.key, entry.key] : [pred.key],
      fromRevision: seen.revision + 1n,
    };
    assert(woke.type !== 'read', 'queue: a watch answered with a read');
    if (woke.type === 'compacted') {
      // The predecessor may have gone meanwhile; its deletion is then unknown (lock-delay applies).
      gone = { token: pred.createRevision, deleteRevision: 0n };
    } else if (woke.type === 'deleted' && own === 'guarded') {
      return {
        type: 'moved-up',
        gone: { token: pred.createRevision, deleteRevision: woke.revision },
      };
    }
  }
}
