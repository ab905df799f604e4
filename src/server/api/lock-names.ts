// The lock names this member's Lock service was asked for, so /metrics can report each lock's
// holder, queue and fencing token from the key space (src/server/metrics). The key space has no
// mark that tells a lock's keys from others (`etcdctl lock` and Go's concurrency.Mutex write the
// same layout from the client side), so the names come from the Lock calls themselves: a lock
// only ever taken through other members appears on their /metrics, not on this one's.

/** Lock names tracked at most; the one asked for least recently goes first (label cardinality). */
export const LOCK_NAMES_TRACKED_MAX = 100;

export interface TrackedLock {
  readonly name: Uint8Array;
  /** The newest fencing token seen for it (a holder key's create revision), 0 before any. */
  lastToken: number;
}

export class LockNames {
  /** By the name's bytes (latin1: one char per byte, so distinct names stay distinct). */
  private readonly byKey = new Map<string, TrackedLock>();

  /** A Lock call for `name` arrived. */
  note(name: Uint8Array): void {
    const key = Buffer.from(name).toString('latin1');
    const known = this.byKey.get(key);
    // Re-inserted: a Map iterates in insertion order, so the first entry is the stalest.
    this.byKey.delete(key);
    this.byKey.set(key, known ?? { name: Uint8Array.from(name), lastToken: 0 });
    if (this.byKey.size > LOCK_NAMES_TRACKED_MAX) {
      const stalest = this.byKey.keys().next();
      if (stalest.done !== true) this.byKey.delete(stalest.value);
    }
  }

  entries(): Iterable<TrackedLock> {
    return this.byKey.values();
  }
}
