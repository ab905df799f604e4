// The queue's decisions as functions of what was read: which incarnation a contender queued
// with, whether it still holds its key, and whether it is first (etcd client/v3/concurrency:
// Mutex.tryAcquire and Election.Campaign decide the first two, waitDeletes in key.go the third).
// The server's services and the SDK call the same functions on their own reads.
import type { QueueEntry } from './requests.js';

/** What the decisions look at in a key as read. */
export interface QueueKv {
  readonly key: Uint8Array;
  readonly createRevision: bigint;
  readonly lease: bigint;
}

/** What the enqueue Txn (requests.ts enqueueTxn) found. */
export type Enqueued<K extends QueueKv> =
  /** The key was put: its create revision is the Txn's revision. */
  | { readonly type: 'created'; readonly token: bigint }
  /**
   * The key was there: an earlier call with the same lease queued it (a retry whose first answer
   * was lost, or a second Lock with one lease), and this one reuses it, as etcd's Mutex.tryAcquire
   * does. `sameLease` is false when the key was written on another lease (by hand, say): etcd does
   * not look, the SDK refuses it.
   */
  | { readonly type: 'found'; readonly token: bigint; readonly kv: K; readonly sameLease: boolean }
  /** The Txn failed its `CreateRevision(key) == 0` yet read no key back: never at one revision. */
  | { readonly type: 'vanished' };

export function enqueued<K extends QueueKv>(
  lease: bigint,
  succeeded: boolean,
  revision: bigint,
  existing: K | undefined,
): Enqueued<K> {
  if (succeeded) return { type: 'created', token: revision };
  if (existing === undefined) return { type: 'vanished' };
  return {
    type: 'found',
    token: existing.createRevision,
    kv: existing,
    sameLease: existing.lease === lease,
  };
}

/** Whether `kv` is still the entry's key: the same incarnation (create revision). */
export function stillHeld(entry: Pick<QueueEntry, 'token'>, kv: QueueKv | undefined): boolean {
  return kv !== undefined && kv.createRevision === entry.token;
}

/**
 * Where a contender stands, from one read at one revision of its own key and of its predecessor
 * (requests.ts predecessorRange): `lost` if its key is gone or is another incarnation, `first` if
 * no older key is left, else `behind` the one key to wait on. `own` is `guarded` when the caller
 * did not read it because a watch guards it (the SDK's KeyGuard); then only the head check's Txn
 * (headOf) may declare the turn.
 */
export type Standing<K extends QueueKv> =
  | { readonly type: 'lost' }
  | { readonly type: 'first' }
  | { readonly type: 'behind'; readonly predecessor: K };

export function standingOf<K extends QueueKv>(
  entry: Pick<QueueEntry, 'token'>,
  own: QueueKv | undefined | 'guarded',
  predecessor: K | undefined,
): Standing<K> {
  if (own !== 'guarded' && !stillHeld(entry, own)) return { type: 'lost' };
  return predecessor === undefined ? { type: 'first' } : { type: 'behind', predecessor };
}

/** The answer of the head check (requests.ts headCheckTxn). */
export type Head = 'head' | 'lost' | 'not-head';

/**
 * `own` is what the failure branch read back. With the key intact (token and lease), the compare
 * that failed is the one on the prefix: an older key is queued (all were read at one revision).
 * Never guesses victory.
 */
export function headOf(entry: QueueEntry, succeeded: boolean, own: QueueKv | undefined): Head {
  if (succeeded) return 'head';
  if (!stillHeld(entry, own) || own?.lease !== entry.lease) return 'lost';
  return 'not-head';
}

/**
 * Whether the entry already owns the queue, from the first-created key read in its enqueue Txn
 * (Mutex.tryAcquire: `ownerKey[0].CreateRevision == m.myRev`, or no key at all).
 */
export function ownsQueue(entry: Pick<QueueEntry, 'token'>, first: QueueKv | undefined): boolean {
  return first === undefined || first.createRevision === entry.token;
}
