// The Raft state machine: pure and synchronous, in the style of etcd-io/raft. Inputs are
// `step(message)`, `tick()`, `propose()`, `proposeConfChange()`, `readIndex()`,
// `transferLeader()` and the evidence inputs `leaderUnreachable()` and `campaignOnEvidence()`;
// the output is a `Ready` that the replica loop persists, sends and applies before calling
// `advance()`. No clock, no I/O, no randomness but the injected PRNG.
//
// Section numbers refer to Ongaro's dissertation "Consensus: Bridging Theory and Practice" (2014)
// unless they say "Raft §", the extended paper (Ongaro & Ousterhout 2014).
import { assert } from '../base/assert.js';
import type { Mutants, MutantName } from '../base/mutants.js';
import { NO_MUTANTS } from '../base/mutants.js';
import type { Prng } from '../base/prng.js';
import { logIndex, NONE, term, type LogIndex, type NodeId, type Term } from '../base/units.js';
import {
  applyConfChange,
  decodeConfChange,
  encodeConfChange,
  isVoter,
  type ConfAt,
} from './conf.js';
import { RaftLog } from './log.js';
import {
  COMMITTED_PER_READY_MAX,
  APPEND_BYTES_MAX,
  ENTRIES_PER_APPEND_MAX,
  INFLIGHT_APPENDS_MAX,
  PENDING_READS_MAX,
  PROPOSAL_BYTES_MAX,
  UNCOMMITTED_ENTRIES_MAX,
} from './limits.js';
import { Progress } from './progress.js';
import { quorumIndex, voteResult } from './quorum.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  ProposeResult,
  Ready,
  ReadState,
  Role,
  Snapshot,
  SoftState,
} from './types.js';

export interface RaftOptions {
  readonly id: NodeId;
  /** The configuration to start from when storage holds no snapshot. */
  readonly initialConf: ConfState;
  /** Election timeout in ticks; each node draws its timeout from [electionTicks, 2×electionTicks). */
  readonly electionTicks: number;
  /** Heartbeat interval in ticks; must be well below electionTicks (Raft §5.6). */
  readonly heartbeatTicks: number;
  /**
   * Silence from the leader we follow that is tolerated without an election, in ticks (issue 19:
   * a paused leader is not a dead one). Default 0: etcd's behaviour. When set, a follower of a
   * known leader campaigns on silence only when told (`leaderUnreachable`, fed by the replica's heartbeat
   * detector) or, as a ceiling, once its randomized timeout plus these ticks have passed; and a
   * node's own stall (`tickStalled`) counts toward neither its election nor its CheckQuorum
   * timer, since nobody could be heard while it was stopped. Votes are still refused only within
   * `electionTicks` of hearing the leader (inLease), so once a detector fires, its peers grant.
   */
  readonly pauseTicks?: number;
  /** PreVote (thesis §9.6): a partitioned node cannot raise terms and disrupt a healthy leader. Default on. */
  readonly preVote?: boolean;
  /** CheckQuorum (thesis §6.2): a leader that lost its majority steps down within a timeout. Default on. */
  readonly checkQuorum?: boolean;
  readonly prng: Prng;
  /** Entries per append message (default ENTRIES_PER_APPEND_MAX); 1 replicates entry by entry. */
  readonly entriesPerAppendMax?: number;
  /** Appends in flight per follower (default INFLIGHT_APPENDS_MAX). */
  readonly inflightAppendsMax?: number;
  /** Planted bugs for the simulator's mutation runs; never set in production. */
  readonly mutants?: Mutants;
  /** What the node found on disk at start. */
  readonly storage: {
    readonly hardState: HardState | undefined;
    readonly snapshot: Snapshot | undefined;
    readonly entries: readonly Entry[];
  };
}

interface PendingRead {
  /** The requester's own context, echoed back to it; never used for matching here. */
  readonly context: number;
  readonly index: LogIndex;
  /** The follower that asked, or NONE for a local request. */
  readonly from: NodeId;
  /** The leader's own heartbeat round that confirms this read. */
  readonly round: number;
}

const EMPTY = new Uint8Array(0);

export class Raft {
  readonly id: NodeId;
  term: Term;
  vote: NodeId;
  leader: NodeId = NONE;
  role: Role = 'follower';
  readonly log: RaftLog;

  private readonly opts: RaftOptions;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly mutants: Mutants;
  private baseConf: ConfState;
  /** Configuration entries after the snapshot, oldest first; the newest is in force (§4.1). */
  private confs: ConfAt[] = [];
  private progress = new Map<NodeId, Progress>();
  private votes = new Map<NodeId, boolean>();
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTicks = 0;
  private leadTransferee: NodeId = NONE;
  /** A configuration change may be proposed only once this index is committed. */
  private pendingConfIndex: LogIndex = logIndex(0);
  private transferElapsed = 0;
  private pendingReads: PendingRead[] = [];
  /**
   * ReadIndex rounds of this leadership, numbered by the leader itself: a requester's context may
   * repeat (another follower's counter, a restarted node), a round never does within one term, and
   * answers from other terms are dropped by the term check (etcd#20418 was a reused context).
   */
  private readRound = 0;
  /** The highest round each voter has answered in this leadership. */
  private readAcks = new Map<NodeId, number>();
  /** Reads asked before this leader committed an entry of its term; released once it has. */
  private readsAwaitingTermCommit: { context: number; from: NodeId }[] = [];
  /**
   * The leader we follow whose process is gone, by evidence the replica fed in
   * (`leaderUnreachable`: its peer port refused our reconnect), or NONE. Held only while we follow
   * that leader in this term: any message from it (it is alive after all), a new term or a
   * campaign of our own clears it. While held we are not in the leader's lease (inLease), so we
   * grant a pre-vote or vote that we would otherwise ignore.
   */
  private leaderGone: NodeId = NONE;
  /**
   * The evidence may still start our own pre-vote (`campaignOnEvidence`). Granting another
   * member's pre-vote uses it up: that member campaigns already, and a second campaign at the
   * same moment would split the vote, whose retry waits out a whole randomized timeout.
   */
  private evidenceCampaignDue = false;
  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private prevHard: HardState;
  private prevSoft: SoftState;
  /** Everything handed out in the last Ready, to be acknowledged by advance(). */
  private inReady:
    { lastEntry: Entry | undefined; applied: LogIndex; snapshot: Snapshot | undefined } | undefined;

  constructor(opts: RaftOptions) {
    assert(opts.id !== NONE, 'node id must not be 0');
    assert(
      opts.heartbeatTicks > 0 && opts.heartbeatTicks < opts.electionTicks,
      'need 0 < heartbeat < election ticks',
    );
    this.opts = opts;
    this.preVote = opts.preVote ?? true;
    this.checkQuorum = opts.checkQuorum ?? true;
    this.id = opts.id;
    this.mutants = opts.mutants ?? NO_MUTANTS;
    const { hardState, snapshot, entries } = opts.storage;
    this.term = hardState?.term ?? term(0);
    this.vote = hardState?.vote ?? NONE;
    this.log = new RaftLog(snapshot, entries, hardState?.commit ?? logIndex(0));
    this.baseConf = snapshot?.conf ?? opts.initialConf;
    this.refreshConfs(this.log.firstIndex());
    this.prevHard = this.hardState();
    this.prevSoft = { leader: NONE, role: 'follower', term: this.term };
    this.resetRandomizedElectionTicks();
    this.checkInvariants();
  }

  private has(m: MutantName): boolean {
    return this.mutants.has(m);
  }

  // ---------------------------------------------------------------- configuration

  /**
   * For observers: what this leader knows each follower's log matches, by node. A callback, not a
   * copy: the simulator asks after every message a leader handles.
   */
  forEachMatch(fn: (id: NodeId, match: LogIndex) => void): void {
    for (const [id, pr] of this.progress) fn(id, pr.match);
  }

  conf(): ConfState {
    const last = this.confs[this.confs.length - 1];
    return last ? last.conf : this.baseConf;
  }

  /** The configuration in force at `index` (for snapshots). */
  confAtIndex(index: LogIndex): ConfState {
    let c = this.baseConf;
    for (const ca of this.confs) if (ca.index <= index) c = ca.conf;
    return c;
  }

  private promotable(): boolean {
    return isVoter(this.conf(), this.id);
  }

  /** Rebuild the list of configuration entries from `from` on (after append or truncation). */
  private refreshConfs(from: LogIndex): void {
    this.confs = this.confs.filter((c) => c.index < from && c.index <= this.log.lastIndex());
    const last = this.log.lastIndex();
    for (let i = Math.max(from, this.log.firstIndex()); i <= last; i++) {
      const e = this.log.entry(logIndex(i));
      if (e?.type === 'conf')
        this.confs.push({
          index: e.index,
          conf: applyConfChange(this.conf(), decodeConfChange(e.data)),
        });
    }
    if (this.role === 'leader') this.syncProgressWithConf();
  }

  private lastConfIndex(): LogIndex {
    const last = this.confs[this.confs.length - 1];
    return last ? last.index : logIndex(0);
  }

  private syncProgressWithConf(): void {
    const c = this.conf();
    const members = new Set([...c.voters, ...c.learners]);
    for (const id of members) {
      if (id !== this.id && !this.progress.has(id)) {
        this.progress.set(
          id,
          new Progress(
            logIndex(this.log.lastIndex() + 1),
            this.opts.inflightAppendsMax ?? INFLIGHT_APPENDS_MAX,
          ),
        );
      }
    }
    for (const id of [...this.progress.keys()]) if (!members.has(id)) this.progress.delete(id);
  }

  // ---------------------------------------------------------------- persistent state

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  softState(): SoftState {
    return { leader: this.leader, role: this.role, term: this.term };
  }

  // ---------------------------------------------------------------- role transitions

  private reset(t: Term): void {
    if (this.term !== t) {
      this.term = t;
      this.vote = NONE;
    }
    this.leader = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTicks();
    this.leadTransferee = NONE;
    this.votes.clear();
    this.pendingReads = [];
    this.readRound = 0;
    this.readAcks.clear();
    this.readsAwaitingTermCommit = [];
    this.progress.clear();
    this.forgetEvidence();
  }

  private forgetEvidence(): void {
    this.leaderGone = NONE;
    this.evidenceCampaignDue = false;
  }

  private resetRandomizedElectionTicks(): void {
    // Randomized timeouts make split votes rare (Raft §5.2).
    this.randomizedElectionTicks =
      this.opts.electionTicks + this.opts.prng.int(0, this.opts.electionTicks);
  }

  private becomeFollower(t: Term, leader: NodeId): void {
    this.reset(t);
    this.role = 'follower';
    this.leader = leader;
  }

  private becomePreCandidate(): void {
    // PreVote (§9.6): no term change and no vote, so a node that cannot win disrupts nobody.
    this.votes.clear();
    this.role = 'preCandidate';
    this.leader = NONE;
    this.forgetEvidence();
  }

  private becomeCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become candidate');
    this.reset(term(this.term + 1));
    this.vote = this.id;
    this.role = 'candidate';
  }

  private becomeLeader(): void {
    assert(this.role === 'candidate', 'only a candidate becomes leader');
    this.reset(this.term);
    this.role = 'leader';
    this.leader = this.id;
    this.syncProgressWithConf();
    for (const pr of this.progress.values()) pr.recentActive = true;
    // A no-op entry of the new term (§6.4): commits everything before it and, once committed,
    // tells the leader its commit index is current, which reads and config changes wait for.
    const noop = this.appendEntry('normal', EMPTY);
    this.pendingConfIndex = this.has('confChangeBeforeTermCommit') ? logIndex(0) : noop.index;
  }

  /**
   * Start an election: 'pre' runs the pre-vote round (§9.6), 'election' the real one, and
   * 'transfer' a real one that voters grant even while they still hear a leader (§3.10).
   */
  private campaign(kind: 'pre' | 'election' | 'transfer'): void {
    if (!this.promotable()) return;
    const pre = kind === 'pre';
    const transfer = kind === 'transfer';
    if (pre) this.becomePreCandidate();
    else this.becomeCandidate();
    const voteTerm = pre ? term(this.term + 1) : this.term;
    this.votes.set(this.id, true);
    if (this.tally() === 'won') {
      if (pre) this.campaign('election');
      else this.becomeLeader();
      return;
    }
    for (const to of this.conf().voters) {
      if (to === this.id) continue;
      this.send({
        type: pre ? 'preVote' : 'vote',
        from: this.id,
        to,
        term: voteTerm,
        lastIndex: this.log.lastIndex(),
        lastTerm: this.log.lastTerm(),
        transfer,
      });
    }
  }

  private tally(): 'won' | 'lost' | 'pending' {
    return voteResult(this.conf().voters, this.votes);
  }

  // ---------------------------------------------------------------- inputs

  /** Start an election now, as if the election timeout had fired (etcd's Campaign / MsgHup). */
  hup(): void {
    if (this.role === 'leader') return;
    this.electionElapsed = 0;
    this.campaign(this.preVote ? 'pre' : 'election');
    this.checkInvariants();
  }

  /**
   * Evidence that leader `id` is gone (issue 19). Either the replica's heartbeat detector judged
   * it silent past what a pause may last (`pauseTicks`), or its reconnect to the leader's peer
   * port was refused (ECONNREFUSED), so nothing listens there: the leader's process has exited, or
   * restarted, and a restarted process is a follower. A reset alone, a closed connection or a
   * hello timeout is no such evidence (a live leader may close a connection), and a stopped
   * (SIGSTOPped) or partitioned leader gives none: those are judged by the election timeout.
   *
   * Recorded only by a follower of `id` in this term, with PreVote and CheckQuorum both on: they
   * are what keep a wrong guess harmless. Our pre-vote raises no term (§9.6), and a voter that
   * still hears the leader ignores it (inLease); only a voter with the same evidence grants it.
   * Safety never rests on the guess: a vote still needs a majority and an up-to-date log (§3.6),
   * and every read or lease renewal an old leader answers was confirmed by a heartbeat round that
   * a majority acknowledged in its term, before any of them voted in a later one (§6.4; the
   * bound in lease-clock.ts). So an early election can only end a leadership that a majority has
   * already left, and an old leader still running cannot serve anything the new one contradicts.
   *
   * Returns whether the evidence was taken; the replica then calls `campaignOnEvidence` after a
   * short random delay of its own, so that two followers with the same evidence rarely campaign
   * within one round trip of each other (a split vote).
   */
  leaderUnreachable(id: NodeId): boolean {
    if (!this.preVote || !this.checkQuorum) return false;
    if (this.role !== 'follower' || id === NONE || id === this.id || id !== this.leader)
      return false;
    if (this.leaderGone !== id) {
      this.leaderGone = id;
      this.evidenceCampaignDue = true;
    }
    return true;
  }

  /**
   * Start a pre-vote now on the evidence `leaderUnreachable` took, unless it is gone (the leader
   * spoke, the term moved) or used up (we granted another member's pre-vote meanwhile).
   */
  campaignOnEvidence(): void {
    if (
      this.role === 'follower' &&
      this.leaderGone !== NONE &&
      this.leaderGone === this.leader &&
      this.evidenceCampaignDue
    ) {
      this.evidenceCampaignDue = false;
      this.electionElapsed = 0;
      this.campaign('pre');
    }
    this.checkInvariants();
  }

  /**
   * Ask again for the pre-votes of an undecided pre-vote campaign (the replica does, a few times,
   * after one started on evidence). A voter that refused it while it still heard the leader may
   * hold the same evidence by now: its own probe of the dead leader's port came later. Without
   * asking again, the campaign waits out a whole randomized timeout, and if that voter meanwhile
   * campaigned too with a shorter log, each refuses the other until then. A pre-vote changes no
   * term and no vote (thesis §9.6), so asking again is harmless.
   */
  repeatPreVote(): void {
    if (this.role === 'preCandidate') this.campaign('pre');
    this.checkInvariants();
  }

  /**
   * We follow a leader that we hold evidence against (a refused reconnect, or the detector's
   * silence) and have not heard from since: what we send it now most likely goes nowhere.
   */
  get leaderSuspected(): boolean {
    return this.leaderGone !== NONE && this.leaderGone === this.leader;
  }

  tick(): void {
    if (this.role === 'leader') this.tickLeader();
    else this.tickElection();
    this.checkInvariants();
  }

  /**
   * One tick of time during which this node itself was stopped (a stall the replica measured):
   * heartbeats and the transfer and snapshot timers are due as usual, but a stalled node heard
   * nobody, so neither its election timer nor its CheckQuorum window counts the tick. Safety
   * does not rest on either timer (quorum intersection does, lease-clock.ts); without
   * `pauseTicks` this is a plain tick.
   */
  tickStalled(): void {
    if ((this.opts.pauseTicks ?? 0) === 0) {
      this.tick();
      return;
    }
    this.electionElapsed--;
    this.tick();
    if (this.electionElapsed < 0) this.electionElapsed = 0;
  }

  private tickElection(): void {
    this.electionElapsed++;
    // With a leader to wait for, a pause of it is tolerated: the detector decides sooner.
    const ceiling =
      this.randomizedElectionTicks + (this.leader !== NONE ? (this.opts.pauseTicks ?? 0) : 0);
    if (this.promotable() && this.electionElapsed >= ceiling) {
      this.electionElapsed = 0;
      this.campaign(this.preVote ? 'pre' : 'election');
    }
  }

  private tickLeader(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    // A transfer that has not completed within an election timeout is abandoned (§3.10), and
    // the leader takes proposals again.
    if (this.leadTransferee !== NONE && ++this.transferElapsed >= this.opts.electionTicks) {
      this.leadTransferee = NONE;
    }
    for (const pr of this.progress.values()) {
      // A snapshot message may be lost; without an answer in an election timeout, probe again.
      if (pr.state === 'snapshot' && ++pr.snapshotTicks >= this.opts.electionTicks)
        pr.becomeProbe();
    }
    if (this.electionElapsed >= this.opts.electionTicks) {
      this.electionElapsed = 0;
      // The planted bug: CheckQuorum's step-down is lost (followers still refuse votes while
      // they hear from us, so a leader cut off from its majority keeps the cluster unavailable).
      if (this.checkQuorum && !this.quorumActive() && !this.has('checkQuorumOff')) {
        // CheckQuorum (§6.2): we have not heard from a majority in an election timeout, so a
        // new leader may exist; stop acting as leader.
        this.becomeFollower(this.term, NONE);
        return;
      }
      for (const pr of this.progress.values()) pr.recentActive = false;
    }
    if (this.heartbeatElapsed >= this.opts.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      // Periodic heartbeats carry the newest pending round, so a round whose answers were lost
      // is confirmed by the next one instead of waiting forever.
      const last = this.pendingReads[this.pendingReads.length - 1];
      this.broadcastHeartbeat(last ? last.round : 0);
    }
  }

  private quorumActive(): boolean {
    const active = new Map<NodeId, boolean>();
    for (const id of this.conf().voters) {
      active.set(id, id === this.id || (this.progress.get(id)?.recentActive ?? false));
    }
    return voteResult(this.conf().voters, active) === 'won';
  }

  propose(data: Uint8Array): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'notLeader', leader: this.leader };
    if (this.leadTransferee !== NONE)
      return { ok: false, reason: 'transferring', leader: this.leader };
    if (data.length > PROPOSAL_BYTES_MAX)
      return { ok: false, reason: 'tooLarge', leader: this.leader };
    if (this.log.lastIndex() - this.log.committed >= UNCOMMITTED_ENTRIES_MAX) {
      return { ok: false, reason: 'tooLarge', leader: this.leader };
    }
    const e = this.appendEntry('normal', data);
    this.checkInvariants();
    return { ok: true, index: e.index, term: e.term };
  }

  /**
   * One server at a time (§4.1). A new leader must first commit an entry of its own term: until
   * then its log may end with a configuration change of an earlier term that it cannot know to be
   * committed, and a second change on top of it could form majorities that do not overlap
   * (Ongaro, raft-dev 2015). As in etcd-raft, `pendingConfIndex` starts at the leader's last index
   * (its no-op) and moves to each change it proposes; a change is accepted once it is committed.
   */
  proposeConfChange(cc: ConfChange): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'notLeader', leader: this.leader };
    if (this.leadTransferee !== NONE)
      return { ok: false, reason: 'transferring', leader: this.leader };
    if (this.pendingConfIndex > this.log.committed) {
      return { ok: false, reason: 'confChangePending', leader: this.leader };
    }
    const e = this.appendEntry('conf', encodeConfChange(cc));
    this.pendingConfIndex = e.index;
    this.checkInvariants();
    return { ok: true, index: e.index, term: e.term };
  }

  /** Ask for a linearizable read point (§6.4). The answer comes as a ReadState with `context`. */
  readIndex(context: number): boolean {
    if (this.role === 'leader') return this.leaderReadIndex(context, NONE);
    if (this.leader === NONE) return false;
    this.send({ type: 'readIndex', from: this.id, to: this.leader, term: this.term, context });
    return true;
  }

  /** The voter this leader is handing leadership to (§3.10), or NONE when it is not. */
  get transferee(): NodeId {
    return this.leadTransferee;
  }

  /** Hand leadership to `to` (§3.10): bring its log up to date, then tell it to campaign now. */
  transferLeader(to: NodeId): boolean {
    if (this.role !== 'leader' || to === this.id || !isVoter(this.conf(), to)) return false;
    const pr = this.progress.get(to);
    if (!pr) return false;
    this.leadTransferee = to;
    this.transferElapsed = 0;
    if (pr.match === this.log.lastIndex())
      this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
    else this.sendAppend(to);
    return true;
  }

  /**
   * Take the application's snapshot at `index` (applied) and drop the log up to
   * `index - keepEntries` (Raft §7); keeping a tail lets slightly lagging followers catch up from
   * the log instead of a whole snapshot.
   */
  compact(index: LogIndex, data: Uint8Array, keepEntries = 0): Snapshot {
    const t = this.log.term(index);
    assert(t !== undefined, () => `compact: unknown index ${index}`);
    assert(index <= this.log.applied, () => `compact: ${index} not applied yet`);
    // The planted bug: the snapshot carries the newest configuration, appended but maybe not
    // committed, instead of the one in force at its index.
    const conf = this.has('snapshotConfOfLast') ? this.conf() : this.confAtIndex(index);
    const snap: Snapshot = { index, term: t, conf, data };
    const cut = logIndex(Math.max(this.log.snapshotIndex, index - keepEntries));
    this.baseConf = this.confAtIndex(cut);
    this.log.compact(cut);
    this.confs = this.confs.filter((c) => c.index > cut);
    this.lastSnapshot = snap;
    this.checkInvariants();
    return snap;
  }

  /** The newest snapshot this node holds, to send to followers behind the log's first index. */
  lastSnapshot: Snapshot | undefined;

  private appendEntry(type: Entry['type'], data: Uint8Array): Entry {
    const e: Entry = { index: logIndex(this.log.lastIndex() + 1), term: this.term, type, data };
    this.log.append(e);
    if (type === 'conf') this.refreshConfs(e.index);
    this.broadcastAppend();
    // A single-voter cluster commits as soon as the entry is durable (see advance()).
    return e;
  }

  // ---------------------------------------------------------------- step

  step(m: Message): void {
    assert(m.to === this.id, () => `message for ${m.to} delivered to ${this.id}`);
    this.stepInner(m);
    this.checkInvariants();
  }

  private inLease(): boolean {
    // With CheckQuorum, a node that heard from a leader within the minimum election timeout
    // ignores vote requests: the leader is probably alive (§4.2.3). Unless its own reconnect to
    // that leader was refused since (leaderUnreachable): then it knows better.
    return (
      this.checkQuorum &&
      this.leader !== NONE &&
      this.electionElapsed < this.opts.electionTicks &&
      this.leaderGone === NONE
    );
  }

  private stepInner(m: Message): void {
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        if (!m.transfer && this.inLease()) return;
      }
      if (m.type === 'preVote') {
        // Never change term because of a pre-vote.
      } else if (m.type === 'preVoteResp' && !m.reject) {
        // A granted pre-vote carries the future term; it is counted below.
      } else {
        const leader =
          m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap' ? m.from : NONE;
        this.becomeFollower(m.term, leader);
      }
    } else if (m.term < this.term) {
      if ((this.checkQuorum || this.preVote) && (m.type === 'heartbeat' || m.type === 'app')) {
        // A stale leader cut off from us must learn the new term, or (with CheckQuorum) it could
        // keep sending and we would never answer in a way that deposes it.
        this.ackAppend(m.from, logIndex(0));
      } else if (m.type === 'preVote') {
        this.send({
          type: 'preVoteResp',
          from: this.id,
          to: m.from,
          term: this.term,
          reject: true,
        });
      }
      return;
    }

    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVoteRequest(m);
      return;
    }
    switch (this.role) {
      case 'leader':
        this.stepLeader(m);
        break;
      case 'candidate':
      case 'preCandidate':
        this.stepCandidate(m);
        break;
      case 'follower':
        this.stepFollower(m);
        break;
    }
  }

  private handleVoteRequest(m: Extract<Message, { type: 'vote' | 'preVote' }>): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.leader === NONE) ||
      (m.type === 'preVote' && m.term > this.term);
    const upToDate = this.log.isUpToDate(m.lastIndex, m.lastTerm, this.has('voteIndexOnly'));
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    if (canVote && upToDate) {
      // A pre-vote answer carries the candidate's future term, so it is not taken as stale.
      this.send({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
      // Another member campaigns on the same evidence: ours now would split the vote.
      if (m.type === 'preVote') this.evidenceCampaignDue = false;
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type: respType, from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  private stepFollower(m: Message): void {
    // A message from the leader we took for gone: it is alive, and the evidence was wrong (or
    // about an earlier process); back to judging it by the election timeout.
    if (m.from === this.leaderGone) this.forgetEvidence();
    switch (m.type) {
      case 'app':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleSnapshot(m);
        return;
      case 'timeoutNow':
        this.campaign('transfer');
        return;
      case 'readIndexResp':
        this.readStates.push({ index: m.index, context: m.context });
        return;
      default:
        // A readIndex here means we are not the leader (any more): dropped; the asker retries.
        return;
    }
  }

  private stepCandidate(m: Message): void {
    switch (m.type) {
      case 'app':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case 'voteResp':
      case 'preVoteResp': {
        const expected = this.role === 'preCandidate' ? 'preVoteResp' : 'voteResp';
        if (m.type !== expected) return;
        this.votes.set(m.from, !m.reject);
        const r = this.tally();
        if (r === 'won') {
          if (this.role === 'preCandidate') this.campaign('election');
          else this.becomeLeader();
        } else if (r === 'lost') {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      default:
        return;
    }
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case 'appResp':
        this.handleAppendResponse(m);
        return;
      case 'heartbeatResp':
        this.handleHeartbeatResponse(m);
        return;
      case 'readIndex':
        if (!this.conf().voters.includes(m.from) && !this.conf().learners.includes(m.from)) return;
        this.leaderReadIndex(m.context, m.from);
        return;
      default:
        return;
    }
  }

  // ---------------------------------------------------------------- follower handlers

  /** Tell the leader that our log matches its log up to `index`. */
  private ackAppend(to: NodeId, index: LogIndex): void {
    const noHint = { hintIndex: logIndex(0), hintTerm: term(0) };
    this.send({
      type: 'appResp',
      from: this.id,
      to,
      term: this.term,
      index,
      reject: false,
      ...noHint,
    });
  }

  private handleAppend(m: Extract<Message, { type: 'app' }>): void {
    if (m.prevIndex < this.log.committed) {
      this.ackAppend(m.from, this.log.committed);
      return;
    }
    if (this.log.matchTerm(m.prevIndex, m.prevTerm)) {
      // Raft §5.3: delete only from the first conflicting entry; entries we already hold that
      // match must stay, since a stale append may arrive after newer ones.
      this.log.appendAt(m.entries, this.has('truncateOnStaleAppend'));
      const first = m.entries[0];
      if (first) this.refreshConfs(first.index);
      const lastNew = logIndex(m.prevIndex + m.entries.length);
      this.log.commitTo(logIndex(Math.min(m.commit, lastNew)));
      this.ackAppend(m.from, lastNew);
      return;
    }
    // Fast backtracking: point the leader at the last index whose term could still match.
    let hintIndex = logIndex(Math.min(m.prevIndex, this.log.lastIndex()));
    hintIndex = this.log.findConflictByTerm(hintIndex, m.prevTerm);
    const hintTerm = this.log.term(hintIndex) ?? term(0);
    const rejection = { index: m.prevIndex, reject: true, hintIndex, hintTerm };
    this.send({ type: 'appResp', from: this.id, to: m.from, term: this.term, ...rejection });
  }

  private handleHeartbeat(m: Extract<Message, { type: 'heartbeat' }>): void {
    // The leader sends min(match, commit), so we hold every entry up to m.commit.
    if (m.commit > this.log.committed && m.commit <= this.log.lastIndex())
      this.log.commitTo(m.commit);
    this.send({
      type: 'heartbeatResp',
      from: this.id,
      to: m.from,
      term: this.term,
      context: m.context,
    });
  }

  private handleSnapshot(m: Extract<Message, { type: 'snap' }>): void {
    const s = m.snapshot;
    if (s.index <= this.log.committed) {
      this.ackAppend(m.from, this.log.committed);
      return;
    }
    if (this.log.matchTerm(s.index, s.term)) {
      // We already hold the entries: just learn that they are committed. Only the snapshot's
      // index is known to match the leader; a tail after it may still diverge.
      this.log.commitTo(s.index);
    } else {
      this.log.restore(s);
      this.baseConf = s.conf;
      this.confs = [];
      this.lastSnapshot = s;
    }
    this.ackAppend(m.from, s.index);
  }

  // ---------------------------------------------------------------- leader handlers

  private send(m: Message): void {
    this.msgs.push(m);
  }

  private broadcastAppend(): void {
    for (const id of this.progress.keys()) this.sendAppend(id);
  }

  private broadcastHeartbeat(context: number): void {
    for (const [id, pr] of this.progress) {
      // The planted bug: the leader's commit index, not clamped to what the follower matches.
      const commit = this.has('heartbeatCommitUnclamped')
        ? this.log.committed
        : logIndex(Math.min(pr.match, this.log.committed));
      this.send({ type: 'heartbeat', from: this.id, to: id, term: this.term, commit, context });
      if (commit > pr.sentCommit) pr.sentCommit = commit;
    }
  }

  /** Send the next append (or a snapshot) to `to` if its progress allows. */
  private sendAppend(to: NodeId, allowEmpty = true): boolean {
    const pr = this.progress.get(to);
    if (!pr || !pr.canSend()) return false;
    const prevIndex = logIndex(pr.next - 1);
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined || pr.next < this.log.firstIndex()) {
      const snap = this.lastSnapshot;
      assert(
        snap !== undefined,
        () => `follower ${to} needs index ${pr.next} but no snapshot exists`,
      );
      this.send({ type: 'snap', from: this.id, to, term: this.term, snapshot: snap });
      pr.becomeSnapshot(snap.index);
      return true;
    }
    const entries = withinBytes(
      this.log.slice(
        pr.next,
        this.log.lastIndex(),
        this.opts.entriesPerAppendMax ?? ENTRIES_PER_APPEND_MAX,
      ),
      APPEND_BYTES_MAX,
    );
    if (entries.length === 0 && !allowEmpty) return false;
    this.send({
      type: 'app',
      from: this.id,
      to,
      term: this.term,
      prevIndex,
      prevTerm,
      entries,
      commit: this.log.committed,
    });
    const last = logIndex(prevIndex + entries.length);
    pr.sentAppend(last, entries.length);
    // The follower adopts at most the end of what this append gives it.
    pr.sentCommit = logIndex(Math.max(pr.sentCommit, Math.min(this.log.committed, last)));
    return true;
  }

  private handleAppendResponse(m: Extract<Message, { type: 'appResp' }>): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    pr.recentActive = true;
    if (m.reject) {
      const probeNext =
        m.hintTerm > 0 ? this.log.findConflictByTerm(m.hintIndex, m.hintTerm) : m.hintIndex;
      if (pr.maybeDecrTo(m.index, logIndex(probeNext + 1))) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const oldPaused = !pr.canSend();
    // The planted bug: an acknowledgement that arrives after a newer one lowers the match.
    if (this.has('staleAckLowersMatch') && m.index < pr.match) pr.match = m.index;
    if (!pr.maybeUpdate(m.index)) {
      if (oldPaused) this.sendAppend(m.from, false);
      return;
    }
    if (pr.state === 'probe') pr.becomeReplicate();
    else if (pr.state === 'snapshot' && pr.match >= pr.pendingSnapshot) pr.becomeProbe();
    if (this.maybeCommit()) {
      this.broadcastAppend();
    } else {
      let sent = false;
      while (this.sendAppend(m.from, false)) sent = true; // fill the window
      // Nothing new to send, but the follower may not know that what it holds is committed.
      if (!sent && pr.sentCommit < Math.min(this.log.committed, pr.match)) this.sendAppend(m.from);
    }
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send({ type: 'timeoutNow', from: this.id, to: m.from, term: this.term });
    }
  }

  private handleHeartbeatResponse(m: Extract<Message, { type: 'heartbeatResp' }>): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    pr.recentActive = true;
    pr.probeSent = false;
    // A full window that a heartbeat round did not drain means appends were lost: the follower is
    // alive but has not acknowledged them. Fall back to probing from its match index.
    if (pr.state === 'replicate' && !pr.canSend()) pr.becomeProbe();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from);
    if (m.context !== 0) this.ackRead(m.context, m.from);
  }

  /** The leader's own durable match index counts toward the quorum once it is persisted. */
  private selfMatch(): LogIndex {
    return this.has('ackBeforeFsync') ? this.log.lastIndex() : this.log.persisted;
  }

  /**
   * Raft §5.4.2: commit the highest index a majority of voters has matched, but only if that entry
   * is from the current term; earlier entries are committed indirectly (Figure 8).
   */
  private maybeCommit(): boolean {
    const matches = new Map<NodeId, LogIndex>();
    for (const id of this.conf().voters) {
      matches.set(
        id,
        id === this.id ? this.selfMatch() : (this.progress.get(id)?.match ?? logIndex(0)),
      );
    }
    let idx = quorumIndex(this.conf().voters, matches);
    if (this.has('commitBeyondMatch')) idx = logIndex(Math.max(...matches.values()));
    if (idx <= this.log.committed) return false;
    if (this.log.term(idx) !== this.term && !this.has('figure8')) return false;
    this.log.commitTo(idx);
    this.onCommitAdvanced();
    return true;
  }

  private onCommitAdvanced(): void {
    if (
      this.log.term(this.log.committed) === this.term &&
      this.readsAwaitingTermCommit.length > 0
    ) {
      const waiting = this.readsAwaitingTermCommit;
      this.readsAwaitingTermCommit = [];
      for (const r of waiting) this.leaderReadIndex(r.context, r.from);
    }
    // A leader removed by a committed configuration steps down (§4.2.2).
    if (
      this.role === 'leader' &&
      !isVoter(this.conf(), this.id) &&
      this.lastConfIndex() <= this.log.committed
    ) {
      // Tell the others that the change committed before going: otherwise they learn it only
      // from the next leader's no-op.
      this.broadcastAppend();
      this.becomeFollower(this.term, NONE);
    }
  }

  // ---------------------------------------------------------------- ReadIndex (§6.4)

  /** False when the read is refused because too many are pending (the caller says busy). */
  private leaderReadIndex(context: number, from: NodeId): boolean {
    if (this.log.term(this.log.committed) !== this.term && !this.has('noNoopBeforeReads')) {
      // Until the no-op of this term commits, our commit index may be stale (§6.4, step 1).
      if (this.readsAwaitingTermCommit.length >= PENDING_READS_MAX) return false;
      this.readsAwaitingTermCommit.push({ context, from });
      return true;
    }
    const index = this.log.committed;
    if (this.conf().voters.length === 1 && isVoter(this.conf(), this.id)) {
      this.releaseRead({ context, index, from, round: 0 });
      return true;
    }
    if (this.has('readIndexNoConfirm')) {
      this.releaseRead({ context, index, from, round: 0 });
      return true;
    }
    if (this.pendingReads.length >= PENDING_READS_MAX) return false;
    // Step 2: confirm we are still leader with a heartbeat round sent after this read arrived.
    const round = ++this.readRound;
    this.pendingReads.push({ context, index, from, round });
    this.broadcastHeartbeat(round);
    return true;
  }

  /**
   * A voter answered heartbeat round `round`. Once a majority (the leader counting itself) has
   * answered rounds at or after a read's round, the leader was still leader after that read
   * arrived, and it and every earlier read may be served.
   */
  private ackRead(round: number, from: NodeId): void {
    if (round > (this.readAcks.get(from) ?? 0)) this.readAcks.set(from, round);
    const acked = new Map<NodeId, number>();
    for (const id of this.conf().voters) {
      acked.set(id, id === this.id ? this.readRound : (this.readAcks.get(id) ?? 0));
    }
    const confirmed = quorumIndex<number>(this.conf().voters, acked);
    let n = 0;
    while (n < this.pendingReads.length && (this.pendingReads[n] as PendingRead).round <= confirmed)
      n++;
    if (n === 0) return;
    for (const r of this.pendingReads.splice(0, n)) this.releaseRead(r);
  }

  private releaseRead(r: PendingRead): void {
    if (r.from === NONE || r.from === this.id)
      this.readStates.push({ index: r.index, context: r.context });
    else
      this.send({
        type: 'readIndexResp',
        from: this.id,
        to: r.from,
        term: this.term,
        context: r.context,
        index: r.index,
      });
  }

  // ---------------------------------------------------------------- Ready / advance

  hasReady(): boolean {
    return (
      this.msgs.length > 0 ||
      this.readStates.length > 0 ||
      this.log.pendingSnapshot !== undefined ||
      this.log.persisted < this.log.lastIndex() ||
      this.applyLimit() > this.log.applied ||
      !sameHard(this.hardState(), this.prevHard) ||
      !sameSoft(this.prevSoft, this.softState())
    );
  }

  private applyLimit(): LogIndex {
    return this.has('applyBeforeCommit') ? this.log.lastIndex() : this.log.committed;
  }

  ready(): Ready {
    assert(this.inReady === undefined, 'ready() called twice without advance()');
    const entries = this.log.unstable();
    const snapshot = this.log.pendingSnapshot;
    const committedEntries = snapshot
      ? []
      : this.log.nextCommitted(COMMITTED_PER_READY_MAX, this.applyLimit());
    const hs = this.hardState();
    const soft = this.softState();
    const rd: Ready = {
      softState: sameSoft(soft, this.prevSoft) ? undefined : soft,
      hardState: sameHard(hs, this.prevHard) ? undefined : hs,
      snapshot,
      entries,
      mustSync:
        entries.length > 0 ||
        // The planted bug: a hard state without a vote (a step-down to a newer term) is not
        // worth a sync.
        ((hs.vote !== NONE || !this.has('termChangeNotSynced')) &&
          (hs.term !== this.prevHard.term ||
            // The planted bug: a new vote in a term already on disk is not worth a sync.
            (hs.vote !== this.prevHard.vote && !this.has('voteSyncedOnlyWithTerm')))),
      committedEntries,
      messages: this.msgs,
      readStates: this.readStates,
    };
    this.msgs = [];
    this.readStates = [];
    this.prevHard = hs;
    this.prevSoft = soft;
    const lastApplied = committedEntries[committedEntries.length - 1];
    this.inReady = {
      lastEntry: entries[entries.length - 1],
      applied: lastApplied ? lastApplied.index : this.log.applied,
      snapshot,
    };
    return rd;
  }

  /** The replica has persisted, sent and applied everything in the last Ready. */
  advance(): void {
    const r = this.inReady;
    assert(r !== undefined, 'advance() without ready()');
    this.inReady = undefined;
    if (r.snapshot) {
      if (this.log.pendingSnapshot === r.snapshot) this.log.pendingSnapshot = undefined;
      if (r.snapshot.index > this.log.applied) this.log.appliedTo(r.snapshot.index);
    }
    if (r.lastEntry) this.log.stableTo(r.lastEntry.index, r.lastEntry.term);
    if (r.applied > this.log.applied) this.log.appliedTo(r.applied);
    // The leader's own entries are now durable: they count toward the quorum.
    if (this.role === 'leader' && this.maybeCommit()) this.broadcastAppend();
    this.checkInvariants();
  }

  // ---------------------------------------------------------------- invariants

  /** Cheap structural invariants, asserted after every input. */
  checkInvariants(): void {
    const log = this.log;
    assert(
      log.committed <= log.lastIndex() || this.has('commitBeyondMatch'),
      () => `commit ${log.committed} > last ${log.lastIndex()}`,
    );
    assert(
      log.applied <= log.committed || this.has('applyBeforeCommit'),
      () => `applied ${log.applied} > commit ${log.committed}`,
    );
    assert(log.persisted <= log.lastIndex(), 'persisted beyond last index');
    assert(log.snapshotIndex <= log.committed, 'snapshot beyond commit');
    assert(
      log.lastTerm() <= this.term,
      () => `last log term ${log.lastTerm()} > current term ${this.term}`,
    );
    if (this.role === 'leader') {
      assert(
        this.leader === this.id && this.vote === this.id,
        'a leader voted for itself and leads',
      );
    }
    if (this.role === 'candidate') assert(this.vote === this.id, 'a candidate votes for itself');
  }

  /** The state a golden test or the dashboard shows, in one canonical text form. */
  describe(): string {
    return `${this.id} ${this.role} term=${this.term} vote=${this.vote} lead=${this.leader} last=${this.log.lastIndex()}/${this.log.lastTerm()} commit=${this.log.committed} applied=${this.log.applied}`;
  }

  /** For tests and status pages: a copy of the leader's view of every follower. */
  progressView(): Map<NodeId, { match: LogIndex; next: LogIndex; state: string }> {
    const out = new Map<NodeId, { match: LogIndex; next: LogIndex; state: string }>();
    for (const [id, pr] of this.progress)
      out.set(id, { match: pr.match, next: pr.next, state: pr.state });
    return out;
  }
}

function sameSoft(a: SoftState, b: SoftState): boolean {
  return a.leader === b.leader && a.role === b.role && a.term === b.term;
}

function sameHard(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

/** The first of `entries` whose data fit in `maxBytes` together, and never none. */
function withinBytes(entries: Entry[], maxBytes: number): Entry[] {
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    bytes += (entries[i] as Entry).data.length;
    if (i > 0 && bytes > maxBytes) return entries.slice(0, i);
  }
  return entries;
}
