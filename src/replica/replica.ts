// The one event loop of a node: take the core's Ready, make it durable (one sync per batch: group
// commit), then send its messages, apply its committed entries, answer waiting clients and call
// advance(). Written against Clock, Transport and Disk so the same code runs in the simulator and
// in the server.
import type { Mutants } from '../core/base/mutants.js';
import { NO_MUTANTS } from '../core/base/mutants.js';
import { prng as makePrng, type Prng } from '../core/base/prng.js';
import type { LogIndex, NodeId, Term } from '../core/base/units.js';
import { NONE } from '../core/base/units.js';
import { Raft } from '../core/raft/raft.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  Ready,
  Snapshot,
  SoftState,
} from '../core/raft/types.js';
import type { StateMachine } from '../core/state/machine.js';
import type { Cancel, Clock, Disk, Transport } from './io.js';
import { LeaderWatch, type LeaderDetectorKind } from './leader-watch.js';
import {
  encodeEntries,
  encodeHardState,
  encodeSnapshot,
  encodeSnapshotMarker,
  recover,
  SNAP_FILE,
  WAL_FILE,
} from './wal.js';

export interface ReplicaConfig {
  readonly id: NodeId;
  /** The cluster's bootstrap configuration (etcd's --initial-cluster). */
  readonly initialConf: ConfState;
  /** Length of one Raft tick in milliseconds of the node's monotonic clock. */
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  /** PreVote (thesis §9.6); default on. */
  readonly preVote?: boolean;
  /** CheckQuorum (thesis §6.2); default on. */
  readonly checkQuorum?: boolean;
  /** Compact the log once this many entries have been applied since the last snapshot. */
  readonly snapshotEntries: number;
  /** Entries kept after a snapshot, so slightly lagging followers need no snapshot. */
  readonly snapshotKeepEntries: number;
  readonly seed: number;
  /** Entries per append message; see RaftOptions. */
  readonly entriesPerAppendMax?: number;
  /** Appends in flight per follower; see RaftOptions. */
  readonly inflightAppendsMax?: number;
  readonly mutants?: Mutants;
  /**
   * Reads that arrive in the same turn of the event loop share one ReadIndex round (one
   * heartbeat broadcast for all), issued on the next `clock.after(0)`. Off in the simulator,
   * whose schedules were recorded without it.
   */
  readonly batchReads?: boolean;
  /**
   * A leader sends its appends and heartbeats before its own write is durable, so its fsync
   * and its followers' overlap (thesis §10.2.1). Safe because the core counts the leader's own
   * entries toward commitment only once persisted; messages that promise something about this
   * node's disk (votes, append acks) still wait for the sync, and so does every message of a
   * Ready that carries a term not yet on disk.
   */
  readonly leaderSendsBeforeSync?: boolean;
  /**
   * A pause of the leader this long causes no election (issue 19; leader-watch.ts, raft.ts
   * pauseTicks). Default 0: the randomized election timeout alone judges silence, as in etcd.
   */
  readonly pauseToleranceMs?: number;
  /** Which detector judges the leader's silence when pauseToleranceMs is set. Default phi. */
  readonly leaderDetector?: LeaderDetectorKind;
}

/** Messages a leader may send before its own Ready is durable (leaderSendsBeforeSync). */
const EARLY_TYPES: ReadonlySet<Message['type']> = new Set(['app', 'heartbeat', 'snap']);

/** What happened to an entry, for the simulator's invariant checkers. */
export interface ReplicaObserver {
  /** The node has recovered from its disk and is about to run. */
  onStart?(id: NodeId, raft: Raft): void;
  /** The leader appended a proposal to its log at `index`. */
  onPropose?(id: NodeId, index: LogIndex, t: Term, data: Uint8Array): void;
  /** Entry `e` is about to be applied. */
  onApply?(id: NodeId, e: Entry): void;
  /**
   * Entry `e` was applied: the state machine holds it, and no later entry yet. `result` is what
   * the state machine answered (undefined for a configuration change).
   */
  onApplied?(id: NodeId, e: Entry, result: unknown): void;
  onSoftState?(id: NodeId, s: SoftState): void;
  onPersistedHardState?(id: NodeId, hs: HardState): void;
  /** A batch of entries goes to the WAL (a sync follows when it must be durable). */
  onWrite?(id: NodeId, entries: readonly Entry[]): void;
  /**
   * A batch is durable: its entries and the snapshot it wrote (at `snapshotIndex`) are on disk.
   * Reported after the sync, before any message of the batch is sent.
   */
  onPersisted?(id: NodeId, entries: readonly Entry[], snapshotIndex: LogIndex | undefined): void;
  /** A proposal is answered as applied, with entry `e`. */
  onAnswered?(id: NodeId, e: Entry): void;
  onRestoreSnapshot?(id: NodeId, s: Snapshot): void;
}

export type ProposalOutcome<R> =
  | { readonly ok: true; readonly result: R; readonly index: LogIndex }
  | {
      readonly ok: false;
      readonly reason: 'notLeader' | 'dropped' | 'busy';
      readonly leader: NodeId;
    };

export type ReadOutcome =
  | { readonly ok: true; readonly index: LogIndex }
  | { readonly ok: false; readonly reason: 'notLeader' | 'busy'; readonly leader: NodeId };

interface PendingProposal<R> {
  readonly term: Term;
  readonly done: (o: ProposalOutcome<R>) => void;
}

interface PendingRead {
  index: LogIndex | undefined;
  readonly done: (o: ReadOutcome) => void;
}

/** Waiting proposals and reads per node: beyond this a request is refused as busy. */
export const PENDING_REQUESTS_MAX = 10_000;
/**
 * Ticks one catch-up runs at most. Past two election timeouts more ticks change nothing: a
 * leader has checked its quorum twice and a follower has campaigned; the rest is dropped.
 */
const CATCH_UP_ELECTIONS_MAX = 3;
/**
 * A catch-up of more than this many ticks means this process was stalled (stopped, starved,
 * a long GC) rather than a timer firing a little late; with a pause tolerance the stalled ticks
 * count toward no timer that judges others' silence (raft.ts, tickStalled).
 */
const STALL_TICKS_MIN = 2;
/**
 * How long after taking evidence that the leader is gone (peerUnreachable) a follower starts its
 * pre-vote: its rank among the surviving voters times this slot, plus a random part below
 * EVIDENCE_JITTER_MS. Followers see the same refused reconnect within a few milliseconds of each
 * other; if two campaigned within one round trip, each would grant the other's pre-vote, vote for
 * itself, and the split vote would wait out a whole randomized election timeout (Raft §5.2). By
 * rank, the first campaigns alone and the next, holding the same evidence, grants it (granting
 * uses its own campaign up, raft.ts); a slot of a few round trips on a LAN is enough.
 */
export const EVIDENCE_RANK_SLOT_MS = 20;
export const EVIDENCE_JITTER_MS = 10;
/**
 * An evidence campaign still undecided this long after its pre-vote asks again (raft.ts,
 * repeatPreVote), at most EVIDENCE_PREVOTE_REPEATS_MAX times: the voter that refused it may have
 * taken the same evidence since. Two rank slots: that voter's own campaign has started by then.
 */
export const EVIDENCE_PREVOTE_REPEAT_MS = 2 * EVIDENCE_RANK_SLOT_MS;
export const EVIDENCE_PREVOTE_REPEATS_MAX = 3;

export class Replica<R> {
  readonly raft: Raft;
  private readonly cfg: ReplicaConfig;
  private readonly mutants: Mutants;
  private syncing = false;
  private stopped = false;
  private cancelTick: Cancel;
  /** The clock reading the core's ticks have been counted up to. */
  private tickedToMs: number;
  private proposals = new Map<LogIndex, PendingProposal<R>>();
  private reads = new Map<number, PendingRead>();
  /** Reads waiting for the next batched ReadIndex round (batchReads). */
  private readBatch: ((o: ReadOutcome) => void)[] | undefined;
  /**
   * Read contexts start at a random base per run of the node, so that an answer meant for a read
   * of its previous run (still queued somewhere) cannot release a read of this one.
   */
  private nextReadContext: number;
  private readonly prng: Prng;
  /** Draws of the evidence campaign's delay (a stream of its own, so others stay as they were). */
  private readonly evidencePrng: Prng;
  /** The evidence campaign waiting for its moment, if any. */
  private evidenceTimer: Cancel | undefined;
  /** The detector on the leader's heartbeats; undefined without a pause tolerance. */
  private readonly leaderWatch: LeaderWatch | undefined;
  /** A snapshot of our own to write with the next batch. */
  private ownSnapshot: Snapshot | undefined;
  /** The last index written to the WAL (for the rewriteNotSynced mutant only). */
  private writtenLast = 0;
  /**
   * The term of the last hard state written. A Ready is persisted only once every earlier one
   * that changed the term was synced, so a Ready whose term differs from it is the first to
   * carry that term, and the term is not on disk until this Ready's sync.
   */
  private writtenTerm = 0;

  constructor(
    cfg: ReplicaConfig,
    private readonly sm: StateMachine<R>,
    private readonly clock: Clock,
    private readonly transport: Transport,
    private readonly disk: Disk,
    private readonly observer: ReplicaObserver = {},
  ) {
    this.cfg = cfg;
    this.mutants = cfg.mutants ?? NO_MUTANTS;
    this.prng = makePrng(cfg.seed);
    this.evidencePrng = this.prng.fork('evidence');
    this.leaderWatch =
      (cfg.pauseToleranceMs ?? 0) > 0
        ? new LeaderWatch({
            kind: cfg.leaderDetector ?? 'phi',
            heartbeatMs: cfg.tickMs * cfg.heartbeatTicks,
            pauseToleranceMs: cfg.pauseToleranceMs ?? 0,
          })
        : undefined;
    this.nextReadContext = 1 + this.prng.fork('read-contexts').int(0, 2 ** 31) * 2 ** 20;
    const walBytes = disk.read(WAL_FILE);
    const rec = recover(walBytes, disk.read(SNAP_FILE), {
      mutants: this.mutants,
    });
    let hardState = rec.hardState;
    this.writtenTerm = rec.hardState?.term ?? 0;
    if (this.mutants.has('voteNotPersisted') && hardState) {
      // The planted bug: term and vote live only in memory; after a restart the node believes the
      // term of its last entry and that it has not voted.
      const lastTerm =
        rec.entries[rec.entries.length - 1]?.term ?? rec.snapshot?.term ?? hardState.term;
      hardState = { term: lastTerm, vote: 0 as NodeId, commit: hardState.commit };
    }
    if (rec.snapshot) sm.restore(rec.snapshot.data);
    this.raft = new Raft({
      id: cfg.id,
      initialConf: cfg.initialConf,
      electionTicks: cfg.electionTicks,
      heartbeatTicks: cfg.heartbeatTicks,
      ...((cfg.pauseToleranceMs ?? 0) > 0
        ? { pauseTicks: Math.ceil((cfg.pauseToleranceMs ?? 0) / cfg.tickMs) }
        : {}),
      ...(cfg.preVote !== undefined ? { preVote: cfg.preVote } : {}),
      ...(cfg.checkQuorum !== undefined ? { checkQuorum: cfg.checkQuorum } : {}),
      prng: this.prng.fork('election'),
      mutants: this.mutants,
      ...(cfg.entriesPerAppendMax !== undefined
        ? { entriesPerAppendMax: cfg.entriesPerAppendMax }
        : {}),
      ...(cfg.inflightAppendsMax !== undefined
        ? { inflightAppendsMax: cfg.inflightAppendsMax }
        : {}),
      storage: { hardState, snapshot: rec.snapshot, entries: rec.entries },
    });
    this.raft.lastSnapshot = rec.snapshot;
    if (walBytes && rec.walValidBytes < walBytes.length) {
      // Cut a torn or preallocated tail off before appending after it.
      this.syncing = true;
      disk.truncate(WAL_FILE, rec.walValidBytes, () => {
        this.syncing = false;
        this.process();
      });
    }
    observer.onStart?.(cfg.id, this.raft);
    this.tickedToMs = clock.nowMs();
    this.cancelTick = clock.every(cfg.tickMs, () => this.tick());
    this.process();
  }

  get id(): NodeId {
    return this.cfg.id;
  }

  /**
   * Stop. A server answers its waiting proposals and reads now (dropped, not leader); the
   * simulator's crashes do not, since a crashed node answers nothing.
   */
  stop(answerWaiting = false): void {
    this.stopped = true;
    this.cancelTick();
    this.evidenceTimer?.();
    if (!answerWaiting) return;
    this.failProposals();
    const reads = [...this.reads.values()];
    this.reads.clear();
    for (const r of reads) r.done({ ok: false, reason: 'notLeader', leader: this.raft.leader });
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.mutants.has('keepaliveUnconfirmed')) {
      // The planted bug (today's code before the fix): one tick per timer callback, however
      // late it fired, so a stalled leader's CheckQuorum falls behind real time.
      this.raft.tick();
      this.tickedToMs = this.clock.nowMs();
    } else this.catchUp();
    this.judgeSilence();
    this.process();
  }

  /**
   * Act on the detector: a leader silent past the tolerated pause is suspected the way a refused
   * reconnect is (`suspectLeader`), and the pre-vote starts after the same rank delay.
   */
  private judgeSilence(): void {
    const w = this.leaderWatch;
    const raft = this.raft;
    if (w === undefined || raft.role !== 'follower' || raft.leader === NONE) return;
    if (w.silent(raft.leader, this.clock.nowMs())) this.suspectLeader(raft.leader);
  }

  /** The detector's level for the leader we follow (0 if none, or without a pause tolerance). */
  leaderSilenceLevel(): number {
    const raft = this.raft;
    if (this.leaderWatch === undefined || raft.role !== 'follower') return 0;
    return this.leaderWatch.level(raft.leader, this.clock.nowMs());
  }

  /**
   * Bring the core up to the present before deciding something outside it (the lease clock's
   * expiry check): a leader that slept through two election timeouts learns it no longer leads.
   */
  catchUpNow(): void {
    if (this.stopped || this.mutants.has('keepaliveUnconfirmed')) return;
    this.catchUp();
    this.process();
  }

  /**
   * Count the ticks that real time owes the core. Timers fire late, and once for a whole stall
   * (a stopped or starved process): the core's election and CheckQuorum timers must count the
   * time that passed, not the callbacks that ran. Runs before every input too, so a process that
   * wakes up knows how long it slept before it answers anything (a leader that has not heard from
   * a quorum for two election timeouts steps down first, Raft thesis §6.2).
   */
  private catchUp(): void {
    const now = this.clock.nowMs();
    const due = Math.floor((now - this.tickedToMs) / this.cfg.tickMs);
    if (due <= 0) return;
    this.tickedToMs += due * this.cfg.tickMs;
    const n = Math.min(due, CATCH_UP_ELECTIONS_MAX * this.cfg.electionTicks);
    if (this.leaderWatch === undefined || due <= STALL_TICKS_MIN) {
      for (let i = 0; i < n; i++) this.raft.tick();
      return;
    }
    // A stall: all but the last tick passed while this process could hear nothing.
    this.leaderWatch.shift((due - 1) * this.cfg.tickMs);
    for (let i = 1; i < n; i++) this.raft.tickStalled();
    this.raft.tick();
  }

  /**
   * The transport's evidence that `peer`'s process is gone: its peer port refused a reconnect
   * (ECONNREFUSED: nothing listens there). The core takes it only about the leader it follows
   * (raft.ts, leaderUnreachable, which says why a wrong guess is harmless and why safety does not
   * rest on it); then this member's pre-vote starts after its evidence delay.
   */
  peerUnreachable(peer: NodeId): void {
    if (this.stopped) return;
    if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
    this.suspectLeader(peer);
  }

  /**
   * Evidence against `peer`, the leader we follow: a refused reconnect, or the detector's
   * silence. If the core takes it, this member's pre-vote starts after its evidence delay.
   */
  private suspectLeader(peer: NodeId): void {
    if (!this.raft.leaderUnreachable(peer) || this.evidenceTimer !== undefined) return;
    const survivors = this.raft
      .conf()
      .voters.filter((v) => v !== peer)
      .sort((a, b) => a - b);
    const rank = Math.max(0, survivors.indexOf(this.id));
    const delayMs = rank * EVIDENCE_RANK_SLOT_MS + this.evidencePrng.next() * EVIDENCE_JITTER_MS;
    this.evidenceTimer = this.clock.after(delayMs, () => {
      this.evidenceTimer = undefined;
      if (this.stopped) return;
      if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
      this.raft.campaignOnEvidence();
      this.process();
      this.repeatPreVote(EVIDENCE_PREVOTE_REPEATS_MAX);
    });
  }

  private repeatPreVote(left: number): void {
    if (left <= 0 || this.raft.role !== 'preCandidate') return;
    this.evidenceTimer = this.clock.after(EVIDENCE_PREVOTE_REPEAT_MS, () => {
      this.evidenceTimer = undefined;
      if (this.stopped || this.raft.role !== 'preCandidate') return;
      if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
      this.raft.repeatPreVote();
      this.process();
      this.repeatPreVote(left - 1);
    });
  }

  receive(m: Message): void {
    if (this.stopped) return;
    if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
    this.raft.step(m);
    if (
      this.leaderWatch !== undefined &&
      m.from === this.raft.leader &&
      (m.type === 'heartbeat' || m.type === 'app' || m.type === 'snap')
    )
      this.leaderWatch.heard(m.from, this.clock.nowMs());
    this.process();
  }

  propose(data: Uint8Array, done: (o: ProposalOutcome<R>) => void): void {
    if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
    if (this.proposals.size >= PENDING_REQUESTS_MAX) {
      done({ ok: false, reason: 'busy', leader: this.raft.leader });
      return;
    }
    const r = this.raft.propose(data);
    if (!r.ok) {
      done({
        ok: false,
        reason: r.reason === 'notLeader' ? 'notLeader' : 'busy',
        leader: r.leader,
      });
      return;
    }
    // A proposal of an earlier term at the same index lost its place in the log.
    this.proposals.get(r.index)?.done({ ok: false, reason: 'dropped', leader: this.raft.leader });
    this.proposals.set(r.index, { term: r.term, done });
    this.observer.onPropose?.(this.id, r.index, r.term, data);
    this.process();
  }

  /** The change's log index, or undefined when the core refused it. */
  proposeConfChange(cc: ConfChange): LogIndex | undefined {
    const r = this.raft.proposeConfChange(cc);
    this.process();
    return r.ok ? r.index : undefined;
  }

  transferLeader(to: NodeId): boolean {
    const ok = this.raft.transferLeader(to);
    this.process();
    return ok;
  }

  /**
   * A linearizable read point: `done` runs once the applied index has reached it (§6.4). The
   * returned function forgets the read (a caller that gave up on it), so a read whose request
   * or answer was lost does not stay pending until the next leader change.
   */
  read(done: (o: ReadOutcome) => void): () => void {
    if (!this.mutants.has('keepaliveUnconfirmed')) this.catchUp();
    if (this.reads.size >= PENDING_REQUESTS_MAX) {
      done({ ok: false, reason: 'busy', leader: this.raft.leader });
      return noop;
    }
    if (this.cfg.batchReads) return this.readBatched(done);
    const context = this.nextReadContext++;
    if (!this.raft.readIndex(context)) {
      const busy = this.raft.role === 'leader';
      done({ ok: false, reason: busy ? 'busy' : 'notLeader', leader: this.raft.leader });
      return noop;
    }
    this.reads.set(context, { index: undefined, done });
    this.process();
    return () => this.reads.delete(context);
  }

  /**
   * Join the batch of reads that the next round serves. The round starts after every read in
   * it arrived (its index is taken then), which is what linearizability needs (§6.4).
   */
  private readBatched(done: (o: ReadOutcome) => void): () => void {
    let batch = this.readBatch;
    if (batch === undefined) {
      const fresh: ((o: ReadOutcome) => void)[] = [];
      batch = fresh;
      this.readBatch = fresh;
      this.clock.after(0, () => {
        this.readBatch = undefined;
        this.issueBatch(fresh);
      });
    }
    const mine = batch;
    mine.push(done);
    return () => {
      const i = mine.indexOf(done);
      if (i >= 0) mine.splice(i, 1);
    };
  }

  private issueBatch(waiters: ((o: ReadOutcome) => void)[]): void {
    if (waiters.length === 0) return;
    const answer = (o: ReadOutcome): void => {
      for (const w of [...waiters]) w(o);
    };
    if (this.stopped) {
      answer({ ok: false, reason: 'notLeader', leader: this.raft.leader });
      return;
    }
    const context = this.nextReadContext++;
    if (!this.raft.readIndex(context)) {
      const busy = this.raft.role === 'leader';
      answer({ ok: false, reason: busy ? 'busy' : 'notLeader', leader: this.raft.leader });
      return;
    }
    this.reads.set(context, { index: undefined, done: answer });
    this.process();
  }

  /** Drive the Ready loop until the core has nothing more or a sync is in flight. */
  process(): void {
    while (!this.stopped && !this.syncing && this.raft.hasReady()) {
      const rd = this.raft.ready();
      this.persist(rd);
    }
  }

  private persist(rd: Ready): void {
    const disk = this.disk;
    // `wrote`: something this Ready promises is durable went to the WAL and needs a sync.
    let wrote = false;
    // Early sends speak for their term, so never for one not yet on disk: the first Ready of a
    // leader that needed no one's vote (a single voter) carries its new term too, and a crash
    // before its sync would let it lead that term again with another log.
    const durableTerm = this.writtenTerm;
    if (rd.hardState) this.writtenTerm = rd.hardState.term;
    const early = (m: Message): boolean =>
      this.cfg.leaderSendsBeforeSync === true && EARLY_TYPES.has(m.type) && m.term <= durableTerm;
    let rewrite = false;
    if (rd.messages.some(early)) {
      for (const m of rd.messages) if (early(m)) this.transport.send(m);
      this.transport.flush?.();
    }
    if (rd.snapshot) {
      disk.replace(SNAP_FILE, encodeSnapshot(rd.snapshot), noop);
      disk.append(WAL_FILE, encodeSnapshotMarker(rd.snapshot.index, rd.snapshot.term));
      wrote = true;
    } else if (this.ownSnapshot) {
      // Snapshot file first, then a rewritten WAL without the compacted prefix: a crash between
      // the two leaves the old WAL, whose entries recovery filters against the new snapshot.
      const s = this.ownSnapshot;
      disk.replace(SNAP_FILE, encodeSnapshot(s), noop);
      const log = this.raft.log;
      const durable =
        log.persisted > log.snapshotIndex ? log.slice(log.firstIndex(), log.persisted) : [];
      disk.replace(
        WAL_FILE,
        concatBytes([
          encodeHardState(this.raft.hardState()),
          encodeSnapshotMarker(s.index, s.term),
          encodeEntries(durable),
        ]),
        noop,
      );
      wrote = true;
    }
    const snapshotIndex = rd.snapshot?.index ?? this.ownSnapshot?.index;
    this.ownSnapshot = undefined;
    // The hard state goes before the entries: a crash keeps a prefix of what was not synced, and
    // entries of a term whose hard state was lost would make the log newer than the node's term
    // (recovery refuses that). The other way round, a kept term with lost entries is a node
    // that is merely behind.
    if (rd.hardState) disk.append(WAL_FILE, encodeHardState(rd.hardState));
    if (rd.entries.length > 0) {
      this.observer.onWrite?.(this.id, rd.entries);
      disk.append(WAL_FILE, encodeEntries(rd.entries));
      rewrite = (rd.entries[0] as Entry).index <= this.writtenLast;
      this.writtenLast = (rd.entries[rd.entries.length - 1] as Entry).index;
      wrote = true;
    }
    // The planted bug: entries that rewrite indexes already written (a conflict truncation) are
    // taken as nothing new and go unsynced.
    const skipSync = rewrite && !rd.snapshot && this.mutants.has('rewriteNotSynced');
    // A hard state that only moves the commit index is written but not synced (Ready.mustSync):
    // one fdatasync fewer per commit on the leader's path and on every follower heartbeat.
    if (rd.mustSync) wrote = true;
    if (skipSync) wrote = false;
    const after = (): void => {
      if (rd.hardState && wrote) this.observer.onPersistedHardState?.(this.id, rd.hardState);
      this.observer.onPersisted?.(this.id, rd.entries, snapshotIndex);
      this.afterPersist(rd, early);
    };
    if (!wrote) {
      after();
      return;
    }
    if (this.mutants.has('ackBeforeFsync')) {
      // The planted bug: act as if durable now; the sync lands later, or never if we crash.
      disk.sync(WAL_FILE, noop);
      after();
      return;
    }
    this.syncing = true;
    disk.sync(WAL_FILE, () => {
      if (this.stopped) return;
      this.syncing = false;
      after();
      this.process();
    });
  }

  /** The messages of `rd` that are `early` went out before the write (persist). */
  private afterPersist(rd: Ready, early: (m: Message) => boolean): void {
    if (this.stopped) return;
    for (const m of rd.messages) if (!early(m)) this.transport.send(m);
    this.transport.flush?.();
    if (rd.softState) {
      this.observer.onSoftState?.(this.id, rd.softState);
      // The planted bug: proposals outlive the leadership they were made under.
      if (rd.softState.role !== 'leader' && !this.mutants.has('answerByIndexOnly'))
        this.failProposals();
      // A read point asked of a leader we no longer follow will never come: refuse it now.
      this.failUnansweredReads();
    }
    if (rd.snapshot) {
      this.sm.restore(rd.snapshot.data);
      this.observer.onRestoreSnapshot?.(this.id, rd.snapshot);
      this.failProposalsUpTo(rd.snapshot.index);
    }
    for (const e of rd.committedEntries) this.applyEntry(e);
    for (const rs of rd.readStates) {
      const r = this.reads.get(rs.context);
      if (r) r.index = rs.index;
    }
    this.raft.advance();
    this.releaseReads();
    this.maybeCompact();
  }

  private applyEntry(e: Entry): void {
    this.observer.onApply?.(this.id, e);
    const result = e.type === 'normal' ? this.sm.apply(e.index, e.data) : undefined;
    this.observer.onApplied?.(this.id, e, result);
    const p = this.proposals.get(e.index);
    if (!p) return;
    this.proposals.delete(e.index);
    // The planted bug: a proposal is answered by whatever entry took its index.
    const mine = p.term === e.term || this.mutants.has('answerByIndexOnly');
    if (mine && e.type === 'normal') {
      this.observer.onAnswered?.(this.id, e);
      p.done({ ok: true, result: result as R, index: e.index });
    } else p.done({ ok: false, reason: 'dropped', leader: this.raft.leader });
  }

  private failProposals(): void {
    // Our proposals may still commit under the next leader; the client cannot know, so it sees a
    // dropped attempt and retries with the same session and sequence number (thesis §6.3).
    const ps = [...this.proposals.values()];
    this.proposals.clear();
    for (const p of ps) p.done({ ok: false, reason: 'dropped', leader: this.raft.leader });
  }

  private failProposalsUpTo(index: LogIndex): void {
    for (const [i, p] of [...this.proposals]) {
      if (i <= index) {
        this.proposals.delete(i);
        p.done({ ok: false, reason: 'dropped', leader: this.raft.leader });
      }
    }
  }

  private failUnansweredReads(): void {
    for (const [ctx, r] of [...this.reads]) {
      if (r.index === undefined) {
        this.reads.delete(ctx);
        r.done({ ok: false, reason: 'notLeader', leader: this.raft.leader });
      }
    }
  }

  private releaseReads(): void {
    // The planted bug: answer once the read index is known, before it is applied here.
    const applied = this.mutants.has('readBeforeApplied') ? Infinity : this.raft.log.applied;
    for (const [ctx, r] of [...this.reads]) {
      if (r.index !== undefined && r.index <= applied) {
        this.reads.delete(ctx);
        r.done({ ok: true, index: r.index });
      }
    }
  }

  /**
   * Take a snapshot of everything applied and drop the whole log below it, now. Before adding a
   * member: a new member learns the configuration it joins from a snapshot, never by replaying
   * a log whose first configuration is implicit (the bootstrap --initial-cluster).
   */
  snapshotNow(): void {
    const log = this.raft.log;
    if (this.stopped || log.applied <= log.snapshotIndex) return;
    this.ownSnapshot = this.raft.compact(log.applied, this.sm.snapshot(), 0);
    this.process();
  }

  private maybeCompact(): void {
    const log = this.raft.log;
    const since = this.raft.lastSnapshot?.index ?? log.snapshotIndex;
    if (log.applied - since < this.cfg.snapshotEntries) return;
    this.ownSnapshot = this.raft.compact(
      log.applied,
      this.sm.snapshot(),
      this.cfg.snapshotKeepEntries,
    );
  }

  /** For observers and tests. */
  get stateMachine(): StateMachine<R> {
    return this.sm;
  }
}

function noop(): void {}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
