// The replicated log as one node sees it: a snapshot prefix, then entries. Tracks what is durable
// (`persisted`), what is committed and what the application has applied, so that Ready can hand
// out exactly the entries to write and the entries to apply.
import { assert } from '../base/assert.js';
import { logIndex, term, type LogIndex, type Term } from '../base/units.js';
import type { Entry, Snapshot } from './types.js';

export class RaftLog {
  /** Index and term of the last entry covered by the snapshot (0, 0 for none). */
  snapshotIndex: LogIndex;
  snapshotTerm: Term;
  /** entries[i].index === snapshotIndex + 1 + i */
  private entries: Entry[] = [];
  /** Every entry at or below this index is durable on this node with the content we hold. */
  persisted: LogIndex;
  committed: LogIndex;
  applied: LogIndex;
  /** A snapshot received from the leader that the replica must persist and apply. */
  pendingSnapshot: Snapshot | undefined;

  constructor(snapshot: Snapshot | undefined, entries: readonly Entry[], committed: LogIndex) {
    this.snapshotIndex = snapshot?.index ?? logIndex(0);
    this.snapshotTerm = snapshot?.term ?? term(0);
    for (const e of entries) {
      if (e.index <= this.snapshotIndex) continue;
      assert(e.index === this.lastIndex() + 1, () => `restored log has a gap at ${e.index}`);
      this.entries.push(e);
    }
    this.persisted = this.lastIndex();
    // A committed index beyond the durable log cannot be trusted (the entries were lost); the
    // leader will re-send them and the commit index with them.
    this.committed = logIndex(Math.max(this.snapshotIndex, Math.min(committed, this.lastIndex())));
    this.applied = this.snapshotIndex;
  }

  firstIndex(): LogIndex {
    return logIndex(this.snapshotIndex + 1);
  }

  lastIndex(): LogIndex {
    return logIndex(this.snapshotIndex + this.entries.length);
  }

  lastTerm(): Term {
    const n = this.entries.length;
    return n === 0 ? this.snapshotTerm : (this.entries[n - 1] as Entry).term;
  }

  /** The term at `i`, or undefined when `i` is compacted away or beyond the log. */
  term(i: LogIndex): Term | undefined {
    if (i === this.snapshotIndex) return this.snapshotTerm;
    if (i < this.snapshotIndex || i > this.lastIndex()) return undefined;
    return (this.entries[i - this.snapshotIndex - 1] as Entry).term;
  }

  entry(i: LogIndex): Entry | undefined {
    if (i <= this.snapshotIndex || i > this.lastIndex()) return undefined;
    return this.entries[i - this.snapshotIndex - 1];
  }

  matchTerm(i: LogIndex, t: Term): boolean {
    return this.term(i) === t;
  }

  /** Entries in [lo, hi], at most `max` of them. lo must not be compacted. */
  slice(lo: LogIndex, hi: LogIndex, max = Number.MAX_SAFE_INTEGER): Entry[] {
    assert(lo > this.snapshotIndex, () => `slice(${lo}) below first index ${this.firstIndex()}`);
    const top = Math.min(hi, this.lastIndex(), lo + max - 1);
    if (top < lo) return [];
    return this.entries.slice(lo - this.snapshotIndex - 1, top - this.snapshotIndex);
  }

  /**
   * Raft §5.4.1: a candidate's log is at least as up to date as ours if its last term is higher,
   * or equal with a last index at least ours. `indexOnly` is the planted "vote on index only" bug.
   */
  isUpToDate(lastIndex: LogIndex, lastTerm: Term, indexOnly = false): boolean {
    if (indexOnly) return lastIndex >= this.lastIndex();
    const ours = this.lastTerm();
    return lastTerm > ours || (lastTerm === ours && lastIndex >= this.lastIndex());
  }

  /** The first index in `ents` whose term differs from ours (or which we lack); 0 if none. */
  findConflict(ents: readonly Entry[]): LogIndex {
    for (const e of ents) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return logIndex(0);
  }

  /**
   * The largest index ≤ `index` whose term is ≤ `t` (etcd-raft's findConflictByTerm): every entry
   * after it up to `index` has a term above `t`, so it cannot match a log whose entry there has `t`.
   */
  findConflictByTerm(index: LogIndex, t: Term): LogIndex {
    let i = Math.min(index, this.lastIndex());
    while (i > this.snapshotIndex) {
      const ti = this.term(logIndex(i));
      if (ti === undefined || ti <= t) break;
      i--;
    }
    return logIndex(i);
  }

  /**
   * Append entries that follow `after`, truncating our log from the first conflict. Committed
   * entries are never truncated: that would break Raft's Log Matching (§5.3).
   */
  appendAt(ents: readonly Entry[], truncateAlways: boolean): void {
    if (ents.length === 0) return;
    const first = (ents[0] as Entry).index;
    let from: LogIndex;
    if (truncateAlways) {
      from = first;
    } else {
      from = this.findConflict(ents);
      if (from === 0) return;
    }
    assert(
      from > this.committed || truncateAlways,
      () => `truncating committed entry ${from} (commit ${this.committed})`,
    );
    assert(
      from <= this.lastIndex() + 1,
      () => `append leaves a gap: ${from} after ${this.lastIndex()}`,
    );
    const keep = from - this.snapshotIndex - 1;
    if (keep < 0) return; // everything before the snapshot is already durable and committed
    this.entries.length = keep;
    for (const e of ents) if (e.index >= from) this.entries.push(e);
    if (this.persisted >= from) this.persisted = logIndex(from - 1);
  }

  /** The leader's own append: entries must continue the log. */
  append(e: Entry): void {
    assert(e.index === this.lastIndex() + 1, () => `append ${e.index} after ${this.lastIndex()}`);
    this.entries.push(e);
  }

  /** Entries not yet durable, for Ready. */
  unstable(): Entry[] {
    return this.persisted >= this.lastIndex()
      ? []
      : this.slice(logIndex(this.persisted + 1), this.lastIndex());
  }

  /** The replica has made entries up to (index, t) durable. Ignored if the log changed since. */
  stableTo(index: LogIndex, t: Term): void {
    if (index > this.persisted && this.matchTerm(index, t)) this.persisted = index;
  }

  commitTo(index: LogIndex): boolean {
    if (index <= this.committed) return false;
    assert(
      index <= this.lastIndex(),
      () => `commit ${index} beyond last index ${this.lastIndex()}`,
    );
    this.committed = index;
    return true;
  }

  /** Committed entries the application has not been handed yet, capped at `max`. */
  nextCommitted(max: number, applyUpTo: LogIndex): Entry[] {
    const lo = logIndex(this.applied + 1);
    const hi = logIndex(Math.min(applyUpTo, this.lastIndex()));
    if (hi < lo || lo <= this.snapshotIndex) return [];
    return this.slice(lo, hi, max);
  }

  appliedTo(index: LogIndex): void {
    assert(index >= this.applied, () => `applied index went back: ${this.applied} → ${index}`);
    this.applied = index;
  }

  /** Replace everything with a snapshot from the leader (Raft §7, InstallSnapshot). */
  restore(s: Snapshot): void {
    this.entries = [];
    this.snapshotIndex = s.index;
    this.snapshotTerm = s.term;
    this.persisted = s.index;
    this.committed = s.index;
    this.pendingSnapshot = s;
  }

  /** Drop entries up to `index`, which the application's snapshot now covers (Raft §7). */
  compact(index: LogIndex): void {
    assert(index <= this.applied, () => `compacting ${index} beyond applied ${this.applied}`);
    if (index <= this.snapshotIndex) return;
    const t = this.term(index);
    assert(t !== undefined, () => `compacting unknown index ${index}`);
    this.entries = this.entries.slice(index - this.snapshotIndex);
    this.snapshotIndex = index;
    this.snapshotTerm = t;
  }
}
