// The simulator's record of what the cluster committed, as events: every member's key space feeds
// a watch hub on every key, and each revision's events are kept with the (true) time the first
// member applied them. Every member must produce the same events for the same revision (else the
// state machines diverged). The record is the ground truth the checkers judge against: watch
// streams (every event once, in order, no gaps), lease losses (a lease's marker key deleted, and
// when) and the fencing token of a lock (its key's create revision).
import type { EtcdMachine } from '../core/state/etcd-machine.js';
import type { WatchEvent } from '../core/state/kv-types.js';
import type { WatchHub } from '../core/state/watch-hub.js';
import { InvariantViolation } from './invariants.js';

export interface RecordedEvent {
  readonly revision: number;
  readonly key: string;
  readonly type: 'put' | 'delete';
  readonly value: string;
  readonly createRevision: number;
  readonly lease: string;
}

interface Revision {
  readonly events: readonly RecordedEvent[];
  /** When the first member applied it (true time). */
  readonly firstMs: number;
}

const ALL_KEYS = new Uint8Array([0]);
const decoder = new TextDecoder();

function recorded(rev: number, e: WatchEvent): RecordedEvent {
  return {
    revision: rev,
    key: decoder.decode(e.kv.key),
    type: e.type === 'DELETE' ? 'delete' : 'put',
    value: decoder.decode(e.kv.value),
    createRevision: e.kv.createRevision,
    lease: e.kv.lease.toString(),
  };
}

function same(a: readonly RecordedEvent[], b: readonly RecordedEvent[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as RecordedEvent;
    const y = b[i] as RecordedEvent;
    if (x.key !== y.key || x.type !== y.type || x.value !== y.value || x.lease !== y.lease)
      return false;
  }
  return true;
}

export class EventReference {
  private readonly revisions = new Map<number, Revision>();
  /** Per member, the revision whose events are still arriving (a catch-up may split one). */
  private readonly open = new Map<number, { rev: number; events: RecordedEvent[]; atMs: number }>();
  /** Values of puts, for the durability check (every write's value is unique). */
  readonly putValues = new Set<string>();
  /** The highest revision recorded. */
  private highest = 0;

  constructor(private readonly now: () => number) {}

  /** Record everything `machine` applies from now on; returns a function that stops it. */
  attach(node: number, machine: EtcdMachine): () => void {
    const hub: WatchHub = machine.openWatchHub();
    const watch = (startRevision: number): void => {
      hub.create({ key: ALL_KEYS, rangeEnd: ALL_KEYS, startRevision });
    };
    // From the first revision the record lacks, not from the machine's own: a restarted member
    // applies what was committed but not yet applied while it recovers, before it is attached,
    // and when no other member applies it (a single voter) only its history holds it.
    watch(Math.min(machine.revision + 1, this.highest + 1));
    const take = (): void => {
      for (const r of hub.drain()) {
        if (r.canceled) {
          // Restored past what its history still holds: watch again from where it is now.
          watch(machine.revision + 1);
          continue;
        }
        for (const e of r.events) this.add(node, recorded(e.kv.modRevision, e));
      }
    };
    hub.onChange = take;
    take();
    return () => {
      // Events the machine published that the hub has not handed out yet belong to this life
      // too: a crash right after an apply must not lose the revision from the record (a
      // restart from a snapshot that holds it never applies it again).
      take();
      this.flush(node);
      machine.closeWatchHub(hub);
    };
  }

  private add(node: number, e: RecordedEvent): void {
    const cur = this.open.get(node);
    if (cur && cur.rev === e.revision) {
      cur.events.push(e);
      return;
    }
    this.flush(node);
    this.open.set(node, { rev: e.revision, events: [e], atMs: this.now() });
  }

  private flush(node: number): void {
    const cur = this.open.get(node);
    if (!cur) return;
    this.open.delete(node);
    this.record(node, cur.rev, cur.events, cur.atMs);
  }

  /** Close every member's open revision (the run is over). */
  flushAll(): void {
    for (const node of [...this.open.keys()]) this.flush(node);
  }

  private record(node: number, rev: number, events: readonly RecordedEvent[], atMs: number): void {
    const known = this.revisions.get(rev);
    if (known) {
      if (!same(known.events, events))
        throw new InvariantViolation(
          'state-machine-safety',
          `member ${node} applied other events at revision ${rev} than another member`,
        );
      if (atMs < known.firstMs) this.revisions.set(rev, { events: known.events, firstMs: atMs });
      return;
    }
    this.revisions.set(rev, { events, firstMs: atMs });
    this.highest = Math.max(this.highest, rev);
    for (const e of events) if (e.type === 'put') this.putValues.add(e.value);
  }

  /** Every recorded event in revision order (within a revision, in the order applied). */
  events(): RecordedEvent[] {
    const revs = [...this.revisions.keys()].sort((a, b) => a - b);
    const out: RecordedEvent[] = [];
    for (const r of revs) out.push(...(this.revisions.get(r) as Revision).events);
    return out;
  }

  /** Every recorded revision's events. */
  revisionEvents(): Map<number, readonly RecordedEvent[]> {
    return new Map([...this.revisions].map(([rev, r]) => [rev, r.events]));
  }

  /** When revision `rev` was first applied, if it was recorded. */
  firstAppliedMs(rev: number): number | undefined {
    return this.revisions.get(rev)?.firstMs;
  }

  /** The create revision of `key` as of revision `rev` (the incarnation alive then), or 0. */
  createRevisionAt(key: string, rev: number): number {
    let found = 0;
    for (let r = rev; r > 0 && found === 0; r--) {
      const at = this.revisions.get(r);
      if (!at) continue;
      for (const e of at.events) {
        if (e.key !== key) continue;
        found = e.type === 'put' ? e.createRevision : -1;
      }
    }
    return Math.max(0, found);
  }

  /**
   * Deletions of keys starting with `prefix`, in revision order: the key, the revision and when
   * first applied.
   */
  deletions(prefix: string): { key: string; revision: number; atMs: number }[] {
    const out: { key: string; revision: number; atMs: number }[] = [];
    for (const [rev, r] of this.revisions)
      for (const e of r.events)
        if (e.type === 'delete' && e.key.startsWith(prefix))
          out.push({ key: e.key, revision: rev, atMs: r.firstMs });
    return out.sort((a, b) => a.revision - b.revision);
  }
}
