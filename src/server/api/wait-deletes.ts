// The queue wait of the Lock and Election services: etcd's `waitDeletes` (etcd
// client/v3/concurrency/key.go), which waits only for the immediate predecessor so that a
// release wakes exactly one waiter (no thundering herd), with the checks that etcd's version
// lacks:
//  - the waiter's own key is watched too, so a waiter whose lease expires (or whose key is
//    deleted) while it is queued learns it at once instead of when its predecessor goes (#19597;
//    etcd's Mutex.Lock carries a TODO for this "early termination");
//  - the turn is declared from one read that sees, at one revision, both that no older key is
//    left and that the waiter's own key is still the one it queued with, so a Campaign or Lock
//    never succeeds without a key and a lease (#19597's phantom leadership, #11456).
import type { ResponseHeader } from '../../core/state/kv-types.js';
import type { KvBackend } from '../../replica/member/backend.js';
import { lastCreatedAtOrBelow } from './lock-keys.js';
import { rangeNow } from './lock-session.js';
import { MachineWatch } from './wait-watch.js';

export type TurnOutcome =
  /** At `header.revision` the own key was alive with its create revision and nothing older. */
  | { readonly type: 'turn'; readonly header: ResponseHeader }
  /** The own key is gone, or was deleted and created again (a different incarnation). */
  | { readonly type: 'lost' };

/**
 * Wait until `ownKey`, created at `myRev`, is the oldest key under `prefix`. Each pass reads
 * linearizably, then watches the predecessor's and the own key's deletion from the next
 * revision, in the same synchronous stretch as the read so that nothing applied in between is
 * missed. The passes are bounded: later keys get larger create revisions, so the set of keys
 * older than `myRev` only shrinks, and each pass ends when one of them (or the own key) goes.
 * Rejects with the abort error when `signal` aborts; every watch is closed on every path.
 */
export async function waitForTurn(
  backend: KvBackend,
  prefix: Uint8Array,
  ownKey: Uint8Array,
  myRev: number,
  signal: AbortSignal,
): Promise<TurnOutcome> {
  for (;;) {
    await backend.readBarrier(signal);
    const own = rangeNow(backend, { key: ownKey }).kvs[0];
    if (own?.createRevision !== myRev) return { type: 'lost' };
    const older = rangeNow(backend, lastCreatedAtOrBelow(prefix, myRev - 1));
    const predecessor = older.kvs[0];
    if (predecessor === undefined) return { type: 'turn', header: older.header };
    const watch = MachineWatch.open(backend.machine, [
      { key: predecessor.key, filters: ['NOPUT'] },
      { key: ownKey, filters: ['NOPUT'] },
    ]);
    try {
      // Any answer (a deletion of either key, or a watcher cancelled by compaction) leads to
      // the same next step: read again. That read tells which it was.
      await watch.next(signal);
    } finally {
      watch.close();
    }
  }
}
