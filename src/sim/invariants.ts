// Raft's safety properties (Raft §5.2–5.4, Figure 3), checked continuously while a seed runs:
// election safety, log matching, leader completeness, state machine safety, durable term and vote,
// and monotonic apply. A violation throws at once, so the failing event is the last one run.
import { fnvBytes, FNV_OFFSET } from '../core/base/hash.js';
import { logIndex, type LogIndex, type NodeId, type Term } from '../core/base/units.js';
import type { Raft } from '../core/raft/raft.js';
import type { RaftLog } from '../core/raft/log.js';
import { applyConfChange, decodeConfChange, describeConf } from '../core/raft/conf.js';
import type {
  ConfState,
  Entry,
  HardState,
  Message,
  Snapshot,
  SoftState,
} from '../core/raft/types.js';

/** Terms per node whose matched index follower-commit keeps (see `matched`). */
const MATCHED_TERMS_KEPT = 4;

export type InvariantName =
  | 'election-safety'
  | 'log-matching'
  | 'leader-completeness'
  | 'commit-safety'
  | 'state-machine-safety'
  | 'durable-term-vote'
  | 'monotonic-apply'
  | 'monotonic-commit'
  | 'durability'
  | 'node-assertion'
  | 'wal-recovery'
  | 'linearizability'
  | 'liveness'
  | 'convergence'
  /** A write answered as certainly not done took effect. */
  | 'definite-failure'
  /** A lease was lost while a renewal its holder was answered still promised it. */
  | 'lease-contract'
  /** Two holders of one lock at once, or tokens out of grant order. */
  | 'lock-exclusion'
  /** A watch stream missed, repeated or reordered an event. */
  | 'watch-delivery'
  /** A forwarded request was started after the member that took it had given up on it. */
  | 'forward-deadline'
  /** A key outlived the lease it was attached to. */
  | 'lease-keys'
  /** A follower committed past the last entry it knew to match its leader's log. */
  | 'follower-commit'
  /** A message that rests on a vote was sent before the vote was durable. */
  | 'durable-before-send'
  /** A leader's match index for a follower went back within its term. */
  | 'match-monotonic'
  /** An applied entry's answer, or a revision's events, differ from the naive key space's. */
  | 'keyspace-reference'
  /** A restarted member's log is not the log it had durably (plus writes the crash kept). */
  | 'durable-log'
  /** A snapshot's configuration is not the one committed at its index. */
  | 'snapshot-conf'
  /** A proposal was answered with an entry other than the one proposed (index and term). */
  | 'answered-proposal'
  /** A connected, healthy majority went without a leader it follows while faults were active. */
  | 'availability';

/** A node's identity and log: a live core, or the log a crashed node would restart with. */
export interface LogHolder {
  readonly id: NodeId;
  readonly log: RaftLog;
}

export class InvariantViolation extends Error {
  override readonly name = 'InvariantViolation';
  constructor(
    readonly invariant: InvariantName,
    message: string,
  ) {
    super(`${invariant}: ${message}`);
  }
}

function fail(inv: InvariantName, msg: string): never {
  throw new InvariantViolation(inv, msg);
}

interface Applied {
  readonly term: Term;
  readonly hash: number;
  /**
   * The highest term any leader had reached when the entry was first applied: an upper bound on
   * the term in which it was committed. Leaders of later terms must hold it (Raft §5.4).
   */
  readonly committedBy: number;
}

export class Invariants {
  private leaders = new Map<Term, NodeId>();
  private maxLeaderTerm = 0;
  /** The committed log as witnessed by applies on any node: index → (term, data hash). */
  readonly committed = new Map<LogIndex, Applied>();
  maxCommitted = 0;
  private lastApplied = new Map<NodeId, number>();
  /** Per node and life: the highest commit index seen, which must never go back. */
  private lastCommit = new Map<NodeId, { raft: Raft; commit: number }>();
  private durable = new Map<NodeId, HardState>();

  onSoftState(id: NodeId, s: SoftState, raft: Raft): void {
    if (s.role !== 'leader') return;
    const t = s.term;
    const prev = this.leaders.get(t);
    if (prev !== undefined && prev !== id)
      fail('election-safety', `term ${t} has two leaders: ${prev} and ${id}`);
    this.leaders.set(t, id);
    if (t > this.maxLeaderTerm) this.maxLeaderTerm = t;
    // Only while the node still leads in that term does its log show what it was elected with.
    if (raft.role === 'leader' && raft.term === t) this.checkLeaderCompleteness(id, raft);
  }

  /** Leader completeness (Raft §5.4): a new leader holds every entry committed before its term. */
  private checkLeaderCompleteness(id: NodeId, raft: Raft): void {
    const log = raft.log;
    let mustHave = this.maxCommitted;
    while (
      mustHave > 0 &&
      (this.committed.get(mustHave as LogIndex)?.committedBy ?? Infinity) >= raft.term
    )
      mustHave--;
    if (log.lastIndex() < mustHave) {
      fail(
        'leader-completeness',
        `leader ${id} (term ${raft.term}) ends at ${log.lastIndex()} but ${mustHave} was committed before its term`,
      );
    }
    for (let i = log.firstIndex(); i <= mustHave; i++) {
      const c = this.committed.get(i);
      const e = log.entry(i);
      if (c && e && c.committedBy < raft.term && (c.term !== e.term || c.hash !== hashEntry(e))) {
        fail(
          'leader-completeness',
          `leader ${id} (term ${raft.term}) has ${i}/${e.term} but ${i}/${c.term} was committed before its term`,
        );
      }
    }
  }

  /** State machine safety (Raft §5.4.3): no two nodes apply different entries at one index. */
  onApply(id: NodeId, e: Entry): void {
    const last = this.lastApplied.get(id) ?? 0;
    if (e.index !== last + 1)
      fail('monotonic-apply', `node ${id} applied ${e.index} after ${last}`);
    this.lastApplied.set(id, e.index);
    const h = hashEntry(e);
    const c = this.committed.get(e.index);
    if (c === undefined) {
      this.committed.set(e.index, { term: e.term, hash: h, committedBy: this.maxLeaderTerm });
      if (e.type === 'conf') this.noteConf(e);
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
      this.checkCommitSafety(id, e, h);
    } else if (c.term !== e.term || c.hash !== h) {
      fail(
        'state-machine-safety',
        `node ${id} applied ${e.index}/${e.term} but another node applied ${e.index}/${c.term} (data ${h === c.hash ? 'same' : 'differs'})`,
      );
    }
  }

  onRestoreSnapshot(id: NodeId, s: Snapshot): void {
    this.checkSnapshotConf(id, s, 'restored');
    const c = this.committed.get(s.index);
    if (c && c.term !== s.term)
      fail(
        'state-machine-safety',
        `node ${id} restored snapshot ${s.index}/${s.term} but ${s.index}/${c.term} was committed`,
      );
    this.lastApplied.set(id, s.index);
  }

  /**
   * Commit safety (Raft §5.4.2, §5.4.3): once an entry is committed, no node that lacks it can win
   * an election, because every majority holds a voter whose log is more up to date than that
   * node's. Checked when an entry is first applied, against the live nodes' logs as they are:
   * a node without the entry that a majority of voters would vote for (by §5.4.1's up-to-date
   * rule) could overwrite it. This is exactly what counting replicas of an old-term entry breaks
   * (Figure 8), and it shows the moment of the unsafe commit rather than the rare later loss.
   */
  private checkCommitSafety(appliedBy: NodeId, e: Entry, hash: number): void {
    const live = this.liveRafts();
    const applier = live.find((r) => r.id === appliedBy);
    if (!applier) return;
    const voters = applier.confAtIndex(e.index).voters;
    // Crashed nodes take part with the log they would restart with.
    const rafts: readonly LogHolder[] = [...live, ...this.crashedLogs()];
    for (const n of rafts) {
      if (!voters.includes(n.id)) continue; // only a voter can be elected
      const log = n.log;
      if (e.index <= log.snapshotIndex) continue; // compacted: it held the entry
      const mine = log.entry(e.index);
      if (mine && mine.term === e.term && hashEntry(mine) === hash) continue;
      let grants = 0;
      for (const v of voters) {
        const voter = v === n.id ? n : rafts.find((r) => r.id === v);
        if (!voter) continue; // a node we know nothing of is not counted: this can only miss
        if (voter === n || voter.log.isUpToDate(log.lastIndex(), log.lastTerm())) grants++;
      }
      if (grants > voters.length / 2) {
        fail(
          'commit-safety',
          `entry ${e.index}/${e.term} is committed but node ${n.id} (last ${log.lastIndex()}/${log.lastTerm()}) lacks it and ${grants} of ${voters.length} voters would elect it`,
        );
      }
    }
  }

  /** The lowest index of entries a node has written but not synced (the simulated disk knows). */
  unsyncedFrom: (id: NodeId) => number | undefined = () => undefined;
  /** The configuration the cluster started with (in force before any change entry). */
  initialConf: ConfState = { voters: [], learners: [] };
  /** Configurations by the index of the committed change entry that made them, ascending. */
  private readonly confs: { index: number; conf: ConfState }[] = [];

  private noteConf(e: Entry): void {
    const last = this.confs[this.confs.length - 1];
    // Indexes are first applied in order: each change applies to the one before it.
    if (last && last.index >= e.index) return;
    const before = last ? last.conf : this.initialConf;
    this.confs.push({ index: e.index, conf: applyConfChange(before, decodeConfChange(e.data)) });
  }

  /** The configuration in force at `index`: that of the last committed change at or below it. */
  private confAt(index: number): ConfState {
    for (let i = this.confs.length - 1; i >= 0; i--) {
      const c = this.confs[i] as { index: number; conf: ConfState };
      if (c.index <= index) return c.conf;
    }
    return this.initialConf;
  }

  /**
   * A snapshot carries the configuration committed at its index, not a newer one (thesis
   * §5.4.1): a node that restores it must not vote or count votes by a change that may yet be
   * truncated. Checked where a snapshot is made visible: sent, restored, recovered.
   */
  private checkSnapshotConf(id: NodeId, s: Snapshot, how: string): void {
    // Snapshots are of applied state, so every change at or below the index is known.
    if (s.index > this.maxCommitted) return;
    const want = this.confAt(s.index);
    const key = (c: ConfState): string => describeConf(c);
    if (key(want) !== key(s.conf))
      fail(
        'snapshot-conf',
        `node ${id} ${how} snapshot ${s.index}/${s.term} with ${key(s.conf)}, but ${key(want)} was committed at it`,
      );
  }

  /** Per node, its proposals by index: the term it proposed in and the data's hash. */
  private readonly proposals = new Map<NodeId, Map<number, { term: number; hash: number }>>();

  onPropose(id: NodeId, index: LogIndex, t: Term, data: Uint8Array): void {
    let mine = this.proposals.get(id);
    if (!mine) {
      mine = new Map();
      this.proposals.set(id, mine);
    }
    mine.set(index, { term: t, hash: fnvBytes(FNV_OFFSET, data) });
  }

  /** A proposal answered as applied: the entry is the one proposed, at its index and term. */
  onAnswered(id: NodeId, e: Entry): void {
    const p = this.proposals.get(id)?.get(e.index);
    this.proposals.get(id)?.delete(e.index);
    if (!p || p.term !== e.term || p.hash !== hashEntry(e))
      fail(
        'answered-proposal',
        `node ${id} answered its proposal ${p ? `${e.index}/${p.term}` : `at ${e.index} (none)`} with entry ${e.index}/${e.term}${p && p.hash !== hashEntry(e) ? ' (other data)' : ''}`,
      );
  }

  /** The live nodes' cores, for checks that look across the cluster. */
  liveRafts: () => readonly Raft[] = () => [];
  /** The durable logs of crashed nodes, as they would restart. */
  crashedLogs: () => readonly LogHolder[] = () => [];

  /** A node starts (or restarts) applying from its snapshot. */
  onStart(id: NodeId, raft: Raft): void {
    this.lastApplied.set(id, raft.log.applied);
    this.proposals.delete(id);
    if (raft.lastSnapshot) this.checkSnapshotConf(id, raft.lastSnapshot, 'restarted from');
    const d = this.durable.get(id);
    if (d) {
      if (raft.term < d.term)
        fail(
          'durable-term-vote',
          `node ${id} restarted at term ${raft.term} after persisting term ${d.term}`,
        );
      if (raft.term === d.term && d.vote !== 0 && raft.vote !== d.vote) {
        fail(
          'durable-term-vote',
          `node ${id} restarted in term ${d.term} with vote ${raft.vote} after persisting vote ${d.vote}`,
        );
      }
    }
    // What it recovered is on disk by definition.
    if (!d || raft.term > d.term) this.durable.set(id, raft.hardState());
  }

  onPersistedHardState(id: NodeId, hs: HardState): void {
    const d = this.durable.get(id);
    if (d && (hs.term < d.term || (hs.term === d.term && d.vote !== 0 && hs.vote !== d.vote))) {
      fail(
        'durable-term-vote',
        `node ${id} persisted ${hs.term}/${hs.vote} after ${d.term}/${d.vote}`,
      );
    }
    this.durable.set(id, hs);
  }

  forget(id: NodeId): void {
    this.durable.delete(id);
    this.proposals.delete(id);
    this.lastApplied.delete(id);
    this.matched.delete(id);
  }

  /** Each leader's last seen match index per follower, in its life and term. */
  private readonly matches = new Map<
    NodeId,
    { raft: Raft; term: number; of: Map<NodeId, number> }
  >();

  /**
   * Within one leader's term, what it knows a follower's log matches only grows: a follower never
   * loses entries it acknowledged in that term, so a smaller match can only come from a stale
   * acknowledgement taken as news (a reordered or duplicated reply).
   */
  private checkMatches(id: NodeId, raft: Raft): void {
    const prev = this.matches.get(id);
    if (!prev || prev.raft !== raft || prev.term !== raft.term) {
      const of = new Map<NodeId, number>();
      raft.forEachMatch((peer, match) => of.set(peer, match));
      this.matches.set(id, { raft, term: raft.term, of });
      return;
    }
    // The same leader in the same term: compare and update in place (this runs after every
    // message a leader handles).
    let peers = 0;
    raft.forEachMatch((peer, match) => {
      peers++;
      const before = prev.of.get(peer);
      if (before !== undefined && match < before)
        fail(
          'match-monotonic',
          `leader ${id} of term ${raft.term} took ${peer}'s match from ${before} back to ${match}`,
        );
      prev.of.set(peer, match);
    });
    // A peer that left the configuration is forgotten, so that one added back starts afresh.
    if (prev.of.size !== peers) {
      prev.of.clear();
      raft.forEachMatch((peer, match) => prev.of.set(peer, match));
    }
  }

  /**
   * Node `m.from` sends `m`: a granted vote goes out only once the term and vote it grants are
   * on disk (synced), else a crash could let the node vote again in the same term (Raft §5.2;
   * checked at the send, where the bug is, not at a second leader, which needs a crash in the
   * window and another candidate).
   */
  onSend(m: Message): void {
    if (m.type === 'snap') this.checkSnapshotConf(m.from, m.snapshot, `sent ${m.to}`);
    const d = this.durable.get(m.from);
    // Every message but a pre-vote speaks for a term the sender has on disk (Figure 2: persist
    // currentTerm before responding): one that forgets it at a crash could answer for an older
    // term again.
    if (m.type !== 'preVote' && m.type !== 'preVoteResp' && (!d || d.term < m.term))
      fail(
        'durable-before-send',
        `node ${m.from} sent a ${m.type} of term ${m.term} to ${m.to} with term ${d ? d.term : 'nothing'} on disk`,
      );
    if (m.type === 'appResp' && !m.reject) {
      // An acknowledgement promises the entries up to m.index are on disk (§5.3, §10.2.1).
      const unsynced = this.unsyncedFrom(m.from);
      if (unsynced !== undefined && unsynced <= m.index)
        fail(
          'durable-before-send',
          `node ${m.from} acknowledged ${m.index} to ${m.to} in term ${m.term} while its entries from ${unsynced} were not synced`,
        );
    }
    if (m.type !== 'voteResp' || m.reject) return;
    // A later term on disk is as good: the node can never vote in this term again.
    if (d && (d.term > m.term || (d.term === m.term && d.vote === m.to))) return;
    if (!d || d.term !== m.term || d.vote !== m.to)
      fail(
        'durable-before-send',
        `node ${m.from} granted its vote in term ${m.term} to ${m.to} with ${d ? `${d.term}/${d.vote}` : 'nothing'} on disk`,
      );
  }

  /**
   * Per node and term: the last index it knows matches that term's leader's log, from the
   * appends and snapshots it accepted (log matching makes every entry up to it the leader's).
   * Kept across a restart: what it acknowledged was durable. Kept for a few recent terms, not
   * only the newest: a node that moved to a term it never synced (a candidate that crashed
   * before its hard state was durable) restarts in the older term, where what it matched still
   * holds, and a late heartbeat of that term's leader may then commit on it.
   */
  private readonly matched = new Map<NodeId, { term: number; index: number }[]>();

  /**
   * After `raft` (node `id`) handled `m`: a follower's commit index moved only as far as both
   * what it knows is the leader's (the last entry of the appends it accepted this term, or a
   * snapshot) and what the leader said is committed. A heartbeat proves no entry: the leader
   * sends min(match, commit) so that it never does. Checked where the bug happens, not at the
   * apply where its consequence may (rarely) show.
   */
  onMessageHandled(id: NodeId, m: Message, commitBefore: number, raft: Raft): void {
    let terms = this.matched.get(id);
    if (terms === undefined) this.matched.set(id, (terms = []));
    let known = terms.find((k) => k.term === raft.term);
    let matched = known ? known.index : 0;
    if (m.term === raft.term && raft.role === 'follower') {
      if (m.type === 'app') {
        const last = m.prevIndex + m.entries.length;
        const lastTerm = m.entries[m.entries.length - 1]?.term ?? m.prevTerm;
        if (raft.log.term(logIndex(last)) === lastTerm) matched = Math.max(matched, last);
      } else if (m.type === 'snap') {
        matched = Math.max(matched, m.snapshot.index);
      }
    }
    // Updated in place: this runs after every message a member handles.
    if (known) known.index = matched;
    else {
      known = { term: raft.term, index: matched };
      terms.push(known);
      if (terms.length > MATCHED_TERMS_KEPT) {
        terms.sort((a, b) => b.term - a.term);
        terms.length = MATCHED_TERMS_KEPT;
      }
    }
    if (raft.role === 'leader') this.checkMatches(id, raft);
    const commit = raft.log.committed;
    // Only what a follower learns from its leader: a leader that commits on an acknowledgement
    // and then steps down (it removed itself) is a leader's commit.
    const fromLeader = m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap';
    if (commit <= commitBefore || raft.role !== 'follower' || !fromLeader) return;
    const bound = m.type === 'snap' ? m.snapshot.index : Math.min(m.commit, matched);
    if (commit > bound)
      fail(
        'follower-commit',
        `node ${id} committed to ${commit} on a ${m.type} from ${m.from} in term ${m.term}, past ` +
          `what it knew to be the leader's and committed (${bound})`,
      );
  }

  /** Within one life of a node (one Raft instance), its commit index never decreases. */
  checkCommitMonotonic(rafts: readonly Raft[]): void {
    for (const r of rafts) {
      const seen = this.lastCommit.get(r.id);
      if (seen && seen.raft === r && r.log.committed < seen.commit) {
        fail(
          'monotonic-commit',
          `node ${r.id} commit index went back from ${seen.commit} to ${r.log.committed}`,
        );
      }
      this.lastCommit.set(r.id, { raft: r, commit: r.log.committed });
    }
  }

  /**
   * Log matching (Raft §5.3): if two logs hold an entry with the same index and term, the entries
   * and everything before them are identical. Checked pairwise over the overlap.
   */
  checkLogMatching(rafts: readonly Raft[]): void {
    for (let a = 0; a < rafts.length; a++) {
      for (let b = a + 1; b < rafts.length; b++) {
        const x = (rafts[a] as Raft).log;
        const y = (rafts[b] as Raft).log;
        const lo = Math.max(x.firstIndex(), y.firstIndex());
        const hi = Math.min(x.lastIndex(), y.lastIndex());
        let matchedAbove = false;
        for (let i = hi; i >= lo; i--) {
          const ex = x.entry(i as LogIndex);
          const ey = y.entry(i as LogIndex);
          if (!ex || !ey) continue;
          const same = ex.term === ey.term;
          if (same && ex !== ey && hashEntry(ex) !== hashEntry(ey)) {
            fail(
              'log-matching',
              `nodes ${(rafts[a] as Raft).id} and ${(rafts[b] as Raft).id} hold different entries at ${i}/${ex.term}`,
            );
          }
          if (matchedAbove && !same) {
            fail(
              'log-matching',
              `nodes ${(rafts[a] as Raft).id} and ${(rafts[b] as Raft).id} match above ${i} but differ at ${i}`,
            );
          }
          if (same) matchedAbove = true;
        }
      }
    }
  }
}

/**
 * Entry hashes by entry object. Entries are immutable once created, and the log-matching sweep
 * compares every pair of logs every 100 ms: without the cache it rehashes every etcd command
 * (a few hundred bytes of tagged JSON) many times over.
 */
const entryHashes = new WeakMap<Entry, number>();

export function hashEntry(e: Entry): number {
  let h = entryHashes.get(e);
  if (h === undefined) {
    h = fnvBytes(e.type === 'conf' ? 1 : FNV_OFFSET, e.data);
    entryHashes.set(e, h);
  }
  return h;
}
