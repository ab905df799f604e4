// What each member holds on disk, mirrored from outside the WAL: the entries it had persisted
// when each of its Ready batches completed, with the truncations that a durable rewrite implies.
// At a restart the log recovered from the disk must be that mirror, or the mirror overtaken by
// writes the crash happened to keep — entry for entry. This checks recovery (WAL replay,
// truncation, snapshot markers) and the replica's sync discipline where they go wrong, instead of
// waiting for a lost entry to be elected over (Raft §5.4; the crash model of disk.ts).
import type { NodeId } from '../core/base/units.js';
import type { RaftLog } from '../core/raft/log.js';
import type { Raft } from '../core/raft/raft.js';
import type { Entry } from '../core/raft/types.js';
import { hashEntry, InvariantViolation } from './invariants.js';

interface Held {
  readonly term: number;
  readonly hash: number;
}

interface Mirror {
  /** Index → the entry durable there. */
  readonly entries: Map<number, Held>;
  /** The newest snapshot durable (entries at or below it are gone). */
  snapshotIndex: number;
  /** Entries of the batch being written, not yet durable: a crash may keep some of them. */
  writing: readonly Entry[];
  /**
   * Bounds on the indexes in `entries` (every index held is within them), so that a truncation
   * or a snapshot deletes the indexes it covers instead of scanning the whole mirror at every
   * batch: a mirror holds up to a snapshot interval of entries (up to 1,000).
   */
  low: number;
  high: number;
}

/** What a crashed node had in memory and on disk, for the check at its restart. */
interface CrashImage {
  readonly mirror: Mirror;
  /** Everything its log held in memory, and the batch it was writing: what a crash may keep. */
  readonly memory: Map<number, Held[]>;
  /**
   * The last durable entry memory still held as it was: a restart must keep everything up to
   * it. Durable entries after it had been truncated in memory, and a log rewrite may drop them.
   */
  readonly mustKeep: number;
}

function held(log: RaftLog, i: number): Held | undefined {
  const e = log.entry(i as never);
  return e ? { term: e.term, hash: hashEntry(e) } : undefined;
}

function same(a: Held | undefined, b: Held | undefined): boolean {
  return a !== undefined && b !== undefined && a.term === b.term && a.hash === b.hash;
}

export class DurableLogs {
  private readonly mirrors = new Map<NodeId, Mirror>();
  private readonly crashed = new Map<NodeId, CrashImage>();

  /** A node started from its disk: check what it recovered, then mirror it. */
  onStart(id: NodeId, raft: Raft): void {
    const image = this.crashed.get(id);
    this.crashed.delete(id);
    if (image) this.checkRecovered(id, raft.log, image);
    const log = raft.log;
    const entries = new Map<number, Held>();
    for (let i = log.firstIndex(); i <= log.lastIndex(); i++) {
      const h = held(log, i);
      if (h) entries.set(i, h);
    }
    this.mirrors.set(id, {
      entries,
      snapshotIndex: log.snapshotIndex,
      writing: [],
      low: log.firstIndex(),
      high: log.lastIndex(),
    });
  }

  /** The node is writing a batch with these entries (a sync will follow, unless it is buggy). */
  onWrite(id: NodeId, entries: readonly Entry[]): void {
    const m = this.mirrors.get(id);
    if (m) m.writing = entries;
  }

  /**
   * A batch the node wrote is durable now (the replica says so: its sync completed): its
   * entries, in order, each replacing the entry at its index and everything after it (a
   * rewritten index is a conflict truncation), and its snapshot, which drops what it covers.
   */
  onPersisted(id: NodeId, entries: readonly Entry[], snapshotIndex: number | undefined): void {
    const m = this.mirrors.get(id);
    if (!m) return;
    m.writing = [];
    if (snapshotIndex !== undefined && snapshotIndex > m.snapshotIndex) {
      for (let i = m.low; i <= Math.min(snapshotIndex, m.high); i++) m.entries.delete(i);
      m.low = Math.max(m.low, snapshotIndex + 1);
      m.snapshotIndex = snapshotIndex;
    }
    // A batch is contiguous: its first entry truncates everything from its index on, once.
    const first = entries[0];
    if (first !== undefined) {
      for (let i = Math.max(first.index, m.low); i <= m.high; i++) m.entries.delete(i);
      m.high = Math.min(m.high, first.index - 1);
    }
    for (const e of entries) {
      m.entries.set(e.index, { term: e.term, hash: hashEntry(e) });
      m.low = Math.min(m.low, e.index);
      m.high = Math.max(m.high, e.index);
    }
  }

  /** `raft`'s node lost power: remember what it had, to judge what it recovers. */
  onCrash(id: NodeId, raft: Raft | undefined): void {
    const m = this.mirrors.get(id);
    this.mirrors.delete(id);
    if (!m || !raft) return;
    const memory = new Map<number, Held[]>();
    const add = (i: number, h: Held): void => {
      const at = memory.get(i);
      if (at) at.push(h);
      else memory.set(i, [h]);
    };
    // What was being written may be on disk though memory has moved on (truncated again).
    for (const e of m.writing) add(e.index, { term: e.term, hash: hashEntry(e) });
    const log = raft.log;
    for (let i = log.firstIndex(); i <= log.lastIndex(); i++) {
      const h = held(log, i);
      if (h) add(i, h);
    }
    let mustKeep = 0;
    for (const i of m.entries.keys()) if (i > mustKeep) mustKeep = i;
    while (mustKeep > log.snapshotIndex && !same(held(log, mustKeep), m.entries.get(mustKeep)))
      mustKeep--;
    this.crashed.set(id, { mirror: m, memory, mustKeep });
  }

  forget(id: NodeId): void {
    this.mirrors.delete(id);
    this.crashed.delete(id);
  }

  /**
   * The recovered log is the mirror, except that from some index on it may hold what the node
   * had written after its last completed batch (the crash kept part of the unsynced writes).
   * Before that index it must hold every durable entry up to what was persisted; after it, only
   * what the node had in memory. A durable snapshot is never lost.
   */
  private checkRecovered(id: NodeId, r: RaftLog, image: CrashImage): void {
    const { mirror, memory, mustKeep } = image;
    const fail = (what: string): never => {
      throw new InvariantViolation('durable-log', `node ${id} restarted with ${what}`);
    };
    if (r.snapshotIndex < mirror.snapshotIndex)
      fail(`snapshot ${r.snapshotIndex}, older than its durable snapshot ${mirror.snapshotIndex}`);
    let overtaken = false;
    for (let i = r.snapshotIndex + 1; i <= r.lastIndex(); i++) {
      const got = held(r, i);
      const durable = mirror.entries.get(i);
      if (!overtaken && same(got, durable)) continue;
      if (memory.get(i)?.some((h) => same(got, h))) {
        overtaken = true;
        continue;
      }
      fail(
        `entry ${i}/${got?.term} that it neither had durably (${durable ? `${i}/${durable.term}` : 'nothing'}) nor wrote since`,
      );
    }
    if (!overtaken && r.lastIndex() < mustKeep && mustKeep > r.snapshotIndex)
      fail(`its log ending at ${r.lastIndex()}, but entries up to ${mustKeep} were persisted`);
  }
}
