// One tenure member: the Replica loop over a disk and a transport, replicating a ServerMachine (the
// etcd key space and the member table), with the decisions only a leader makes (the lease clock,
// lease-clock.ts), request routing to the leader (leader-routing.ts, forwarder.ts) and member
// changes (member-changes.ts). Written against Clock, Transport, PeerChannel and Disk only: the
// server (src/server/node.ts) and the simulator (src/sim) run this same code. Implements
// KvBackend, which the client API (src/server/api) is written on.
import { NO_MUTANTS, type Mutants } from '../../core/base/mutants.js';
import { prng as makePrng } from '../../core/base/prng.js';
import { NONE, type LogIndex, type NodeId } from '../../core/base/units.js';
import { PROPOSAL_BYTES_MAX } from '../../core/raft/limits.js';
import type { ConfState, Message } from '../../core/raft/types.js';
import type { Command } from '../../core/state/command.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import {
  ERR_CANCELED,
  ERR_LEADER_CHANGED,
  ERR_LEARNER_NOT_READY,
  ERR_MEMBER_NOT_FOUND,
  ERR_MEMBER_NOT_LEARNER,
  ERR_NOT_LEADER,
  ERR_NO_LEADER,
  ERR_PEER_URL_EXIST,
  ERR_REQUEST_TOO_LARGE,
  ERR_STOPPED,
  ERR_TIMEOUT,
  ERR_TOO_MANY_REQUESTS,
} from '../../core/state/etcd-errors.js';
import { EtcdMachine, type EtcdResult } from '../../core/state/etcd-machine.js';
import { DEFAULT_ETCD_LIMITS } from '../../core/state/etcd-limits.js';
import type {
  LeaseId,
  LeaseKeepAliveResponse,
  LeaseTimeToLiveResponse,
} from '../../core/state/kv-types.js';
import type { Cancel, Clock } from '../io.js';
import { Replica, type ProposalOutcome, type ReadOutcome } from '../replica.js';
import type { BackupSnapshot, KvBackend, MemberInfo, NodeStatus } from './backend.js';
import {
  checkInitialHashKv,
  monitorKvHash,
  type CorruptionCheckDeps,
  type PeerHash,
} from './corruption-check.js';
import { computeHashKv, isHashKvAnswer, type HashKvAnswer } from './hash-kv.js';
import { SERVER_VERSION } from './backend.js';
import type { ForwardAnswer, ForwardOp } from './forward-frame.js';
import { Forwarder } from './forwarder.js';
import { deadlineOnPeer, LeaderRouting } from './leader-routing.js';
import { LeaderTransfer, type TransferResult } from './leader-transfer.js';
import { LEASE_EXPIRY_CHECK_MS, LeaseClock, type LeaseCensus } from './lease-clock.js';
import { MemberChanges } from './member-changes.js';
import {
  MEMBER_DEFAULTS,
  PAUSE_TOLERANCE_ELECTIONS,
  type MemberConfig,
  type MemberIo,
  type MemberLog,
} from './member-config.js';
import { etcdErrorOf, RequestError } from './request-error.js';
import {
  encodeEtcdEntry,
  encodeMemberEntry,
  decodeMemberEntry,
  ServerMachine,
  type MemberCommand,
  type MemberRecord,
  type ServerResult,
} from './server-machine.js';
import { LOG_FORMAT_MAX } from './log-record.js';
import { MemberStats } from './member-stats.js';
import { Waiters } from './waiters.js';

type ProposeOp = Extract<ForwardOp, { op: 'propose' | 'member' }>;

const refused = (error: EtcdError): ForwardAnswer => ({ kind: 'refused', error });

/** Errors of a member change that the leader gives before it proposes anything. */
const MEMBER_CHANGE_REFUSALS: readonly EtcdError[] = [
  ERR_PEER_URL_EXIST,
  ERR_MEMBER_NOT_FOUND,
  ERR_MEMBER_NOT_LEARNER,
  ERR_LEARNER_NOT_READY,
];

export class Member implements KvBackend {
  readonly memberId: bigint;
  readonly machine: EtcdMachine;
  readonly clock: Clock;
  readonly id: NodeId;
  readonly replica: Replica<ServerResult>;
  /** What the server's /metrics reads (member-stats.ts). */
  readonly stats = new MemberStats();
  private readonly sm: ServerMachine;
  private readonly log: MemberLog;
  private readonly mutants: Mutants;
  private readonly waiters: Waiters;
  private readonly forwarder: Forwarder;
  private readonly routing: LeaderRouting;
  private readonly leases: LeaseClock;
  private readonly changes: MemberChanges;
  private readonly transfer: LeaderTransfer;
  private readonly leaderListeners = new Set<(leader: bigint) => void>();
  private readonly memberTableListeners = new Set<() => void>();
  private lastLeader: NodeId = NONE;
  private lastRole = 'follower';
  private stopped = false;
  private readonly cancelTimers: Cancel[] = [];
  private readonly peers: MemberIo['peers'];
  /** The commit index recovered from the disk (the initial corruption check hashes there). */
  private readonly committedAtStart: number;
  /** The log record format for `conf` (writeFormat); forgotten when the member table changes. */
  private format: { readonly conf: ConfState; readonly value: number } | undefined;

  constructor(
    private readonly cfg: MemberConfig,
    io: MemberIo,
  ) {
    this.id = cfg.id;
    this.memberId = BigInt(cfg.id);
    this.clock = io.clock;
    this.log = io.log;
    this.peers = io.peers;
    this.mutants = cfg.mutants ?? NO_MUTANTS;
    const prng = makePrng(cfg.seed);
    this.machine = new EtcdMachine(DEFAULT_ETCD_LIMITS, this.mutants);
    this.sm = new ServerMachine(this.machine);
    this.sm.onMembersChanged = () => {
      this.format = undefined;
      for (const l of [...this.memberTableListeners]) l();
    };
    this.sm.onUnreadable = (e) => {
      this.log.error({ index: e.index, format: e.format, err: e.message }, 'unreadable log entry');
      io.fatal?.(e);
    };
    this.waiters = new Waiters(this.clock);
    this.forwarder = new Forwarder(
      io.peers,
      this.clock,
      prng.fork('forward-ids'),
      (op, deadlineMs) => this.serveForwarded(op, deadlineMs),
      (e) =>
        this.log.error(
          { err: e instanceof Error ? e.stack : String(e) },
          'forwarded request failed',
        ),
    );
    const replica = (): Replica<ServerResult> => this.replica;
    this.routing = new LeaderRouting({
      replica,
      forwarder: this.forwarder,
      peers: io.peers,
      waiters: this.waiters,
      clock: this.clock,
      requestTimeoutMs: cfg.requestTimeoutMs,
      heartbeatMs: cfg.heartbeatMs,
      isStopped: () => this.stopped,
      mutants: this.mutants,
      serveLocal: (op, deadlineMs) => this.serveLocal(op, deadlineMs),
    });
    this.leases = new LeaseClock({
      replica,
      machine: this.machine,
      clock: this.clock,
      logFormat: () => this.writeFormat(),
      proposeRevoke: (id, ifExpiredAtMs, term) =>
        this.proposeAsLeader({ type: 'leaseRevoke', id, ifExpiredAtMs }, term),
      warn: (obj, msg) => this.log.warn(obj, msg),
      mutants: this.mutants,
      checkpoint: cfg.leaseCheckpoint ?? MEMBER_DEFAULTS.leaseCheckpoint,
    });
    this.changes = new MemberChanges({
      replica,
      sm: this.sm,
      waiters: this.waiters,
      nowMs: () => this.clock.nowMs(),
      requestTimeoutMs: cfg.requestTimeoutMs,
      heartbeatMs: cfg.heartbeatMs,
      proposeMember: (cmd, signal) => this.proposeMember(cmd, signal),
      setMemberAsLeader: (cmd, untilMs) => this.setMemberAsLeader(cmd, untilMs),
      recordOf: (id) => this.recordOf(id),
      checkLive: (signal) => this.checkLive(signal),
      initialPeerUrls: (id) => this.cfg.initialMembers.get(id)?.peerUrls ?? [],
    });
    this.transfer = new LeaderTransfer({
      replica,
      waiters: this.waiters,
      clock: this.clock,
      heartbeatMs: cfg.heartbeatMs,
      electionMs: cfg.electionMs,
      lastHeardMs: (id) => io.peers.heard(id)?.localMs,
      log: this.log,
    });
    const tickMs = cfg.heartbeatMs;
    const outer = io.observer ?? {};
    this.replica = new Replica<ServerResult>(
      {
        id: cfg.id,
        initialConf: cfg.initialConf,
        tickMs,
        electionTicks: Math.max(2, Math.round(cfg.electionMs / tickMs)),
        heartbeatTicks: 1,
        snapshotEntries: cfg.snapshotCount,
        snapshotKeepEntries: cfg.snapshotKeepEntries ?? Math.min(5000, cfg.snapshotCount),
        seed: prng.fork('replica').int(1, 2 ** 31),
        batchReads: true,
        leaderSendsBeforeSync: true,
        pauseToleranceMs: cfg.pauseToleranceMs ?? PAUSE_TOLERANCE_ELECTIONS * cfg.electionMs,
        ...(cfg.leaderDetector !== undefined ? { leaderDetector: cfg.leaderDetector } : {}),
        mutants: this.mutants,
        ...(cfg.entriesPerAppendMax !== undefined
          ? { entriesPerAppendMax: cfg.entriesPerAppendMax }
          : {}),
        ...(cfg.inflightAppendsMax !== undefined
          ? { inflightAppendsMax: cfg.inflightAppendsMax }
          : {}),
      },
      this.sm,
      this.clock,
      io.transport,
      io.disk,
      {
        onStart: (id, raft) => outer.onStart?.(id, raft),
        onPropose: (id, index, t, data) => outer.onPropose?.(id, index, t, data),
        onWrite: (id, entries) => outer.onWrite?.(id, entries),
        onPersisted: (id, entries, snapshotIndex) =>
          outer.onPersisted?.(id, entries, snapshotIndex),
        onAnswered: (id, e) => outer.onAnswered?.(id, e),
        // Observers run inside the Ready loop, before advance(): anything that proposes or
        // answers clients waits for the loop to finish.
        onSoftState: (id, s) => {
          outer.onSoftState?.(id, s);
          this.clock.after(0, () => this.onSoftState());
        },
        onApply: (id, e) => outer.onApply?.(id, e),
        onApplied: (id, e, result) => {
          outer.onApplied?.(id, e, result);
          this.waiters.onApplied(e.index);
        },
        onPersistedHardState: (id, hs) => outer.onPersistedHardState?.(id, hs),
        // Entries that arrive inside a snapshot are applied without onApply.
        onRestoreSnapshot: (id, snap) => {
          outer.onRestoreSnapshot?.(id, snap);
          this.waiters.onApplied(snap.index);
        },
      },
    );
    // Simple tokens live in memory in etcd and die with the process; replaying the log must not
    // bring back those this member had issued or learned before it stopped.
    this.machine.tokens.forgetIssuedThrough(this.replica.raft.log.lastIndex());
    this.committedAtStart = this.replica.raft.log.committed;
    this.cancelTimers.push(this.clock.every(LEASE_EXPIRY_CHECK_MS, () => this.leases.expire()));
  }

  // ---- Inputs from peers ----

  /** A Raft message from a peer. */
  receiveMessage(m: Message): void {
    this.replica.receive(m);
  }

  /**
   * The peer transport saw `peer`'s peer port refuse a reconnect: its process is gone. Evidence
   * for an early election if `peer` is our leader (replica.ts, peerUnreachable).
   */
  peerUnreachable(peer: NodeId): void {
    if (this.stopped) return;
    this.replica.peerUnreachable(peer);
  }

  /** A forwarding frame from a peer. */
  receiveFrame(from: NodeId, frame: Uint8Array): void {
    if (this.stopped) return;
    this.forwarder.receive(from, frame);
  }

  // ---- KvBackend ----

  get clusterId(): bigint {
    return this.cfg.clusterId();
  }

  raftTerm(): number {
    return this.replica.raft.term;
  }

  hasLeader(): boolean {
    return this.replica.raft.leader !== NONE;
  }

  get isLeader(): boolean {
    return this.replica.raft.role === 'leader';
  }

  get name(): string {
    return this.cfg.name;
  }

  async propose(cmd: Command, signal?: AbortSignal): Promise<EtcdResult> {
    const stats = this.stats;
    stats.proposalsPending++;
    try {
      // A proposal is not idempotent: once it may have been done it is never sent again.
      return (await this.routing.run({ op: 'propose', cmd }, signal, 'never')) as EtcdResult;
    } catch (e) {
      stats.proposalsFailed++;
      throw e;
    } finally {
      stats.proposalsPending--;
    }
  }

  async readBarrier(signal?: AbortSignal): Promise<void> {
    const deadline = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    for (;;) {
      this.checkLive(signal);
      if (!this.hasLeader()) {
        await this.waiters.untilLeaderChange(deadline, signal, ERR_NO_LEADER);
        continue;
      }
      // A follower's read point is one request to the leader and one answer: either may be lost
      // (a link that broke, a full queue), and nothing asks again. So an attempt lasts half an
      // election timeout; then it is forgotten and asked anew (a later read point is as good).
      let forget: () => void = () => {};
      const led = this.replica.raft.role === 'leader';
      const attemptEnd = Math.min(deadline, this.clock.nowMs() + this.cfg.electionMs / 2);
      const o = await this.waiters
        .withDeadline(
          new Promise<ReadOutcome>((resolve) => (forget = this.replica.read(resolve))),
          attemptEnd,
          signal,
        )
        .catch((e: unknown) => {
          forget();
          if (attemptEnd < deadline && etcdErrorOf(e)?.message === ERR_TIMEOUT.message)
            return undefined;
          throw e;
        });
      if (o === undefined) continue;
      if (o.ok) return;
      if (o.reason === 'busy') throw new RequestError(ERR_TOO_MANY_REQUESTS);
      // notLeader: the leader changed before it confirmed; try again with the next one. A
      // deposed leader that knows no successor lets go at once instead (issue 19): the client
      // reads elsewhere now rather than here at the deadline.
      if (led && !this.hasLeader()) throw new RequestError(ERR_LEADER_CHANGED);
    }
  }

  async knownCommittedRevision(signal?: AbortSignal): Promise<number> {
    this.checkLive(signal);
    const log = this.replica.raft.log;
    // Whatever is applied was committed before now.
    if (log.applied >= log.committed) return this.machine.revision;
    const committed = log.committed;
    const before = this.machine.revision;
    let revision = before;
    await this.waiters.untilApplied(
      log.applied,
      committed,
      this.clock.nowMs() + this.cfg.requestTimeoutMs,
      signal,
      // Read in the step that applied the entry, before anything committed later; a snapshot
      // that jumped past it may hold later entries, so then only what was applied before counts.
      (applied) => (revision = applied === committed ? this.machine.revision : before),
    );
    return revision;
  }

  async leaseTimeToLive(
    id: LeaseId,
    keys: boolean,
    signal?: AbortSignal,
  ): Promise<LeaseTimeToLiveResponse> {
    const v = await this.routing.run({ op: 'timeToLive', id, keys }, signal, 'safe');
    return v as LeaseTimeToLiveResponse;
  }

  async leaseKeepAlive(id: LeaseId, signal?: AbortSignal): Promise<LeaseKeepAliveResponse> {
    const observe = this.stats.onKeepAliveMs;
    const startMs = observe === undefined ? 0 : this.clock.nowMs();
    // Renewing twice is harmless, so a renewal whose answer was lost is asked again.
    const r = (await this.routing.run(
      { op: 'keepAlive', id },
      signal,
      'safe',
    )) as LeaseKeepAliveResponse;
    observe?.(this.clock.nowMs() - startMs);
    return r;
  }

  /** The leases by what this member's lease clock says of them (lease-clock.ts, census). */
  leaseCensus(): LeaseCensus {
    return this.leases.census();
  }

  status(): NodeStatus {
    const raft = this.replica.raft;
    const conf = raft.conf();
    return {
      leader: BigInt(raft.leader),
      raftIndex: raft.log.committed,
      raftTerm: raft.term,
      raftAppliedIndex: raft.log.applied,
      dbSizeBytes: this.machine.sizeBytes,
      dbSizeQuotaBytes: this.machine.quotaBytes,
      isLearner: conf.learners.includes(this.id),
      version: SERVER_VERSION,
    };
  }

  members(): readonly MemberInfo[] {
    const conf = this.replica.raft.conf();
    const table = this.sm.memberTable();
    const info = (id: NodeId, isLearner: boolean): MemberInfo => {
      const rec = table.get(String(id));
      const initial = this.cfg.initialMembers.get(id);
      return {
        id: BigInt(id),
        name: rec?.name ?? initial?.name ?? '',
        peerUrls: rec?.peerUrls ?? initial?.peerUrls ?? [],
        clientUrls: rec?.clientUrls ?? [],
        isLearner,
      };
    };
    return [
      ...conf.voters.map((id) => info(id, false)),
      ...conf.learners.map((id) => info(id, true)),
    ];
  }

  /** The replicated member table (names and URLs), for the server's peer transport. */
  memberTable(): ReadonlyMap<string, MemberRecord> {
    return this.sm.memberTable();
  }

  /** Called whenever the replicated member table changes. */
  onMemberTableChange(listener: () => void): () => void {
    this.memberTableListeners.add(listener);
    return () => this.memberTableListeners.delete(listener);
  }

  async memberAdd(
    peerUrls: readonly string[],
    isLearner: boolean,
    signal?: AbortSignal,
  ): Promise<MemberInfo> {
    const op: ForwardOp = { op: 'memberAdd', peerUrls, isLearner };
    return (await this.routing.run(op, signal, 'safe')) as MemberInfo;
  }

  async memberRemove(id: bigint, signal?: AbortSignal): Promise<void> {
    await this.routing.run({ op: 'memberRemove', id }, signal, 'safe');
  }

  async memberUpdate(id: bigint, peerUrls: readonly string[], signal?: AbortSignal): Promise<void> {
    await this.routing.run({ op: 'memberUpdate', id, peerUrls }, signal, 'safe');
  }

  async memberPromote(id: bigint, signal?: AbortSignal): Promise<void> {
    await this.routing.run({ op: 'memberPromote', id }, signal, 'safe');
  }

  /**
   * Make `target` the leader (etcd's MoveLeader). Only the leader does it, as in etcd, which
   * answers a follower `not leader` (v3rpc/maintenance.go); etcdctl asks the leader itself.
   */
  async moveLeader(target: bigint, signal?: AbortSignal): Promise<void> {
    this.checkLive(signal);
    const untilMs = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    await this.transfer.move(Number(target) as NodeId, untilMs, signal);
  }

  /**
   * Before stopping: a leader hands leadership to its most caught-up voter and waits up to an
   * election timeout for it to lead (etcd's Stop, server.go TransferLeadership), so the cluster
   * does not wait out an election timeout of its own. A follower returns at once.
   */
  handOffLeadership(): Promise<TransferResult | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    return this.transfer.handOff(this.clock.nowMs() + this.cfg.electionMs);
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    this.leaderListeners.add(listener);
    return () => this.leaderListeners.delete(listener);
  }

  hashKv(revision: number, signal?: AbortSignal): Promise<HashKvAnswer> {
    this.checkLive(signal);
    return computeHashKv(this.machine, revision, this.clock, signal);
  }

  backupSnapshot(): BackupSnapshot {
    return {
      data: this.sm.snapshot(),
      revision: this.machine.revision,
      appliedIndex: this.machine.appliedIndex,
    };
  }

  // ---- Corruption checks (corruption-check.ts) ----

  /**
   * etcd's --experimental-initial-corrupt-check: compare this member's hash with its peers'
   * at its revision; rejects with DataInconsistencyError when one differs.
   */
  async initialCorruptionCheck(): Promise<void> {
    // etcd's backend holds the applied state at start; here the log is applied again first, up
    // to what this member knew to be committed when it stopped, so the hash is of that state.
    // A hash at any revision compares as well (the peers hash at the same one); waiting only
    // keeps the check from comparing a nearly empty store. So a wait that times out (no leader
    // to confirm the commit index) goes on with what is applied.
    const committed = this.committedAtStart;
    await this.waiters
      .untilApplied(
        this.replica.raft.log.applied,
        committed,
        this.clock.nowMs() + this.cfg.requestTimeoutMs,
        undefined,
      )
      .catch((e: unknown) => {
        const known = etcdErrorOf(e);
        if (known === null) throw e;
        this.log.warn(
          { applied: this.replica.raft.log.applied, committed, err: known.message },
          'initial corruption check: the log is not applied as far as it was committed',
        );
      });
    return checkInitialHashKv(this.corruptionDeps());
  }

  /** etcd's --experimental-corrupt-check-time: while leading, check every `intervalMs`. */
  startCorruptionCheck(intervalMs: number): void {
    this.cancelTimers.push(monitorKvHash(this.corruptionDeps(), intervalMs));
  }

  private corruptionDeps(): CorruptionCheckDeps {
    return {
      selfId: this.id,
      machine: this.machine,
      clock: this.clock,
      log: this.log,
      peers: () => {
        const conf = this.replica.raft.conf();
        return [...conf.voters, ...conf.learners].filter((id) => id !== this.id);
      },
      askPeer: (peer, revision) => this.askPeerHash(peer, revision),
      readBarrier: () => this.readBarrier(),
      isLeader: () => this.isLeader && !this.stopped,
      raiseCorrupt: async (memberId) => {
        const cmd: Command = {
          type: 'alarm',
          action: 'ACTIVATE',
          member: { memberId, alarm: 'CORRUPT' },
        };
        const r = await this.propose(cmd);
        if (r.type === 'error') throw new RequestError(r.error);
        this.log.warn({ member: memberId.toString(16), alarm: 'CORRUPT' }, 'alarm raised');
      },
    };
  }

  /** A peer's hash at `revision` over the peer channel, or why there is none. */
  private async askPeerHash(peer: NodeId, revision: number): Promise<PeerHash> {
    const timeoutMs = this.cfg.requestTimeoutMs;
    // A follower hears nothing from the other followers, so their clocks may be unknown here:
    // then the request goes with no deadline of theirs (a late hash harms nobody; our own
    // timeout bounds the wait).
    const deadline =
      deadlineOnPeer(this.peers, peer, this.clock.nowMs() + timeoutMs) ?? Number.MAX_SAFE_INTEGER;
    const a = await this.forwarder.request(peer, { op: 'hashKV', revision }, deadline, timeoutMs);
    if (a.kind !== 'done') return { ok: false, error: a.error };
    if (!isHashKvAnswer(a.value)) return { ok: false, error: ERR_PEER_MALFORMED };
    return { ok: true, answer: a.value };
  }

  /** A peer's hash request (`hashKV`): any member answers from its own applied state. */
  private async serveHashKv(revision: number, deadlineMs: number): Promise<ForwardAnswer> {
    if (this.stopped) return refused(ERR_STOPPED);
    if (this.clock.nowMs() >= deadlineMs) return refused(ERR_TIMEOUT);
    try {
      const value = await computeHashKv(this.machine, revision, this.clock);
      return { kind: 'done', value, index: this.replica.raft.log.applied };
    } catch (e) {
      const known = etcdErrorOf(e);
      if (known === null) throw e;
      return refused(known);
    }
  }

  // ---- Lifecycle ----

  /** Stop taking part and answer everything waiting (`server stopped`). The disk stays as it is. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.cancelTimers) c();
    this.leases.stop();
    this.replica.stop(true);
    this.forwarder.close(ERR_STOPPED);
    this.waiters.stop();
  }

  /**
   * Stop as a crash does: no more ticks, messages or applies, and nothing answered (a crashed
   * process tells nobody). For the simulator; the server's crash is the process dying.
   */
  halt(): void {
    this.stopped = true;
    for (const c of this.cancelTimers) c();
    this.leases.stop();
    this.replica.stop(false);
  }

  // ---- Writes ----

  /** Propose on this member if it still leads in `term`; never forwarded, never retried. */
  private proposeAsLeader(cmd: Command, term: number): Promise<void> {
    const raft = this.replica.raft;
    if (this.stopped || raft.role !== 'leader' || raft.term !== term) return Promise.resolve();
    const data = encodeEtcdEntry(cmd, this.writeFormat());
    return new Promise((resolve) => this.replica.propose(data, () => resolve()));
  }

  /**
   * The log record format the cluster writes now: see log-record.ts. Asked at every proposal, it
   * changes only with the configuration (a new object) or the member table, so it is kept.
   */
  private writeFormat(): number {
    const conf = this.replica.raft.conf();
    if (this.format?.conf !== conf)
      this.format = { conf, value: this.sm.writeFormat([...conf.voters, ...conf.learners]) };
    return this.format.value;
  }

  private async proposeMember(cmd: MemberCommand, signal?: AbortSignal): Promise<void> {
    await this.routing.run({ op: 'member', cmd }, signal, 'never');
  }

  /** Encode for the log, stamping lease commands with this leader's clock (the only clock lease deadlines are kept on). */
  private encodeOp(op: ProposeOp): Uint8Array {
    const format = this.writeFormat();
    if (op.op === 'member') return encodeMemberEntry(op.cmd, format);
    const c = op.cmd;
    if (c.type === 'leaseGrant' || c.type === 'leaseKeepAlive' || c.type === 'leaseRefreshAll')
      return encodeEtcdEntry({ ...c, nowMs: this.clock.nowMs() }, format);
    return encodeEtcdEntry(c, format);
  }

  private proposeLocal(op: ProposeOp): Promise<ProposalOutcome<ServerResult>> | ForwardAnswer {
    const data = this.encodeOp(op);
    // The API layer admits requests by their wire size; the log entry may still be over the
    // core's limit, which is the client's request being too large.
    if (data.length > PROPOSAL_BYTES_MAX) return refused(ERR_REQUEST_TOO_LARGE);
    return new Promise((resolve) => this.replica.propose(data, resolve));
  }

  /**
   * The leader's side of a request, forwarded or its own; `deadlineMs` (on our clock) bounds its
   * waits. Expected failures come back as typed answers, never as exceptions.
   */
  private async serveLocal(op: ForwardOp, deadlineMs: number): Promise<ForwardAnswer> {
    if (this.stopped) return refused(ERR_STOPPED);
    if (this.replica.raft.role !== 'leader') return refused(ERR_NOT_LEADER);
    const applied = (): number => this.replica.raft.log.applied;
    switch (op.op) {
      case 'hashKV':
        return this.serveHashKv(op.revision, deadlineMs);
      case 'memberAdd':
      case 'memberRemove':
      case 'memberUpdate':
      case 'memberPromote':
        try {
          // Every step starts before the asker's deadline, as a proposal does.
          const value = await this.changeMembers(op, deadlineMs);
          return { kind: 'done', value, index: applied() };
        } catch (e) {
          const known = etcdErrorOf(e);
          if (known === null) throw e;
          const definite = MEMBER_CHANGE_REFUSALS.some((r) => r.message === known.message);
          return definite ? refused(known) : { kind: 'unknown', error: known };
        }
      case 'keepAlive': {
        // The renewal's deadline counts from here, and it holds only if no other leader can
        // have been elected by now: confirmed by a quorum round sent after this (lease-clock.ts).
        const arrivalMs = this.clock.nowMs();
        if (!(await this.leaseClockReady(deadlineMs))) return refused(ERR_NOT_LEADER);
        if (this.mutants.has('keepaliveUnconfirmed'))
          return {
            kind: 'done',
            value: this.leases.renew(op.id, this.clock.nowMs()),
            index: applied(),
          };
        const end = this.leases.beginRenewal(op.id);
        try {
          if (!(await this.confirmLeadership(arrivalMs, deadlineMs)))
            return refused(ERR_NOT_LEADER);
        } finally {
          end();
        }
        const renewed = this.leases.renew(op.id, arrivalMs);
        if (
          renewed.ttlSeconds > 0 &&
          !this.mutants.has('checkpointRenewNoReset') &&
          this.leases.needsReset(op.id) &&
          !(await this.resetCheckpoint(op.id, deadlineMs))
        )
          return refused(ERR_NOT_LEADER);
        if (renewed.ttlSeconds > 0) this.stats.leasesRenewed++;
        return { kind: 'done', value: renewed, index: applied() };
      }
      case 'timeToLive': {
        // Deadlines are on this leader's clock only once its refresh applied; and a deposed
        // leader must not report a lease the new one revoked: confirm that we still lead.
        const arrivalMs = this.clock.nowMs();
        if (!(await this.leaseClockReady(deadlineMs))) return refused(ERR_NOT_LEADER);
        if (!(await this.confirmLeadership(arrivalMs, deadlineMs))) return refused(ERR_NOT_LEADER);
        return { kind: 'done', value: this.leases.timeToLive(op.id, op.keys), index: applied() };
      }
      case 'propose':
      case 'member': {
        if (usesLeaseClock(op) && !(await this.leaseClockReady(deadlineMs)))
          return refused(ERR_NOT_LEADER);
        // A record of a member the table has is its publication (MemberAdd's is of a new
        // member; MemberUpdate's does not come this way: setMemberAsLeader).
        const proposed: ProposeOp =
          op.op === 'member' && op.cmd.type === 'memberSet'
            ? { op: 'member', cmd: { ...op.cmd, member: this.publication(op.cmd.member) } }
            : op;
        // Leadership is being handed on: nothing is proposed, and the asker tries the next leader.
        if (this.transfer.holding) return refused(ERR_NOT_LEADER);
        // Never start what the asker has given up on: it has answered its client already.
        if (this.clock.nowMs() >= deadlineMs) return refused(ERR_TIMEOUT);
        const p = this.proposeLocal(proposed);
        if (!(p instanceof Promise)) return p;
        return this.proposalAnswer(proposed, await p);
      }
    }
  }

  /** What the asker of a proposal is told of its outcome. */
  private proposalAnswer(op: ProposeOp, o: ProposalOutcome<ServerResult>): ForwardAnswer {
    if (o.ok && op.op === 'propose' && op.cmd.type === 'leaseRevoke') this.leases.forget(op.cmd.id);
    if (o.ok) return { kind: 'done', value: o.result, index: o.index };
    if (o.reason === 'notLeader') return refused(ERR_NOT_LEADER);
    if (o.reason === 'busy') return refused(ERR_TOO_MANY_REQUESTS);
    // Dropped: our leadership ended with the entry in our log; the next leader may commit it.
    return { kind: 'unknown', error: ERR_LEADER_CHANGED };
  }

  /**
   * A member's publication as this leader logs it: the name, client URLs and log format it
   * sent, with the peer URLs it has here. etcd publishes attributes only (server.go publish,
   * membership/cluster.go UpdateAttributes keeps the RaftAttributes); a member publishes as soon
   * as it hears of a leader, from a table that may not have caught up, and its peer URLs from
   * there would undo a MemberUpdate applied meanwhile.
   */
  private publication(member: MemberRecord): MemberRecord {
    const known = this.recordOf(member.id);
    return known === undefined ? member : { ...member, peerUrls: known.peerUrls };
  }

  /**
   * Member `id`'s record once everything in our log is applied: that of the last member entry
   * for it not applied yet (a MemberUpdate or a publication proposed a moment ago), else the
   * table's; undefined for a member without one. Read in the step that proposes what is built
   * from it, so that a publication and a MemberUpdate of one member in flight together do not
   * undo each other. An entry that never commits takes with it what was proposed after it.
   */
  private recordOf(id: string): MemberRecord | undefined {
    const log = this.replica.raft.log;
    for (let i = log.lastIndex(); i > log.applied; i--) {
      const e = log.entry(i);
      const cmd = e === undefined ? null : decodeMemberEntry(e.data);
      if (cmd?.type === 'memberSet' && cmd.member.id === id) return cmd.member;
      if (cmd?.type === 'memberDelete' && cmd.id === id) return undefined;
    }
    return this.sm.memberTable().get(id);
  }

  /**
   * On the leader: put `cmd` in the log as it is (MemberUpdate's record, which sets the peer
   * URLs) and resolve once it is applied here. Never forwarded: another leader would take it for
   * a publication. Rejects with a RequestError.
   */
  private async setMemberAsLeader(cmd: MemberCommand, untilMs: number): Promise<void> {
    this.checkLive(undefined);
    if (this.replica.raft.role !== 'leader') throw new RequestError(ERR_NOT_LEADER);
    const deadlineMs = Math.min(untilMs, this.clock.nowMs() + this.cfg.requestTimeoutMs);
    if (this.transfer.holding) throw new RequestError(ERR_NOT_LEADER);
    const op: ProposeOp = { op: 'member', cmd };
    const p = this.proposeLocal(op);
    const a =
      p instanceof Promise
        ? this.proposalAnswer(op, await this.waiters.withDeadline(p, deadlineMs, undefined))
        : p;
    if (a.kind !== 'done') throw new RequestError(a.error);
  }

  /** A member change on the leader; its value is what the asker's caller gets. */
  private async changeMembers(
    op: Extract<ForwardOp, { op: 'memberAdd' | 'memberRemove' | 'memberUpdate' | 'memberPromote' }>,
    deadlineMs: number,
  ): Promise<MemberInfo | null> {
    switch (op.op) {
      case 'memberAdd':
        return this.changes.add(op.peerUrls, op.isLearner, undefined, deadlineMs);
      case 'memberRemove':
        await this.changes.remove(op.id, undefined, deadlineMs);
        return null;
      case 'memberUpdate': {
        const shown = new Map(this.members().map((m) => [m.id.toString(), m]));
        await this.changes.update(op.id, op.peerUrls, shown, undefined, deadlineMs);
        return null;
      }
      case 'memberPromote':
        await this.changes.promote(op.id, undefined, deadlineMs);
        return null;
    }
  }

  /** A request from a peer that must not start once our clock reads `deadlineMs`. */
  private serveForwarded(op: ForwardOp, deadlineMs: number): Promise<ForwardAnswer> {
    if (op.op === 'hashKV') return this.serveHashKv(op.revision, deadlineMs);
    const now = this.clock.nowMs();
    const own = now + this.cfg.requestTimeoutMs;
    // The planted bug: the leader keeps its own deadline only, as if the asker waited forever.
    if (this.mutants.has('forwardIgnoresDeadline')) return this.serveLocal(op, own);
    if (now >= deadlineMs) return Promise.resolve(refused(ERR_TIMEOUT));
    return this.serveLocal(op, Math.min(deadlineMs, own));
  }

  /**
   * Confirm that this member led continuously from `arrivalMs` to now: one heartbeat round sent
   * after it, acknowledged by a quorum (the rounds reads share, Replica.read), the applied state
   * caught up with the commit index of that moment, and no election timeout gone by since —
   * what every leader-side promise about the future rests on.
   */
  private async confirmLeadership(arrivalMs: number, deadlineMs: number): Promise<boolean> {
    const term = this.replica.raft.term;
    let forget: () => void = () => {};
    let o: ReadOutcome;
    try {
      o = await this.waiters.withDeadline(
        new Promise<ReadOutcome>((resolve) => (forget = this.replica.read(resolve))),
        deadlineMs,
        undefined,
      );
    } catch {
      forget();
      return false;
    }
    const raft = this.replica.raft;
    return (
      o.ok &&
      raft.role === 'leader' &&
      raft.term === term &&
      this.leases.ready &&
      this.clock.nowMs() - arrivalMs < this.cfg.electionMs
    );
  }

  /**
   * Commit a reset of the checkpoint of lease `id` before its renewal is answered: a new leader
   * would otherwise continue the lease from the older, shorter remainder (lease-clock.ts, etcd
   * #13491). True once it applied in this leader's term.
   */
  private async resetCheckpoint(id: LeaseId, deadlineMs: number): Promise<boolean> {
    const term = this.replica.raft.term;
    const data = this.leases.resetEntry(id);
    try {
      const o = await this.waiters.withDeadline(
        new Promise<ProposalOutcome<ServerResult>>((resolve) =>
          this.replica.propose(data, resolve),
        ),
        deadlineMs,
        undefined,
      );
      return o.ok && this.replica.raft.term === term;
    } catch {
      return false;
    }
  }

  /** On the leader: wait until its lease clock is in force. False if it stopped leading. */
  private async leaseClockReady(deadlineMs: number): Promise<boolean> {
    for (;;) {
      if (this.replica.raft.role !== 'leader') return false;
      if (this.leases.ready) return true;
      this.leases.ensureRefresh();
      try {
        await this.waiters.sleep(this.cfg.heartbeatMs, deadlineMs, undefined);
      } catch {
        return false;
      }
    }
  }

  // ---- Events ----

  private onSoftState(): void {
    const raft = this.replica.raft;
    if (raft.role === 'leader' && this.lastRole !== 'leader') {
      this.log.info({ term: raft.term }, 'became leader');
      this.leases.ensureRefresh();
    }
    if (raft.role !== 'leader' && this.lastRole === 'leader')
      this.log.info({ term: raft.term, leader: raft.leader.toString(16) }, 'stepped down');
    this.lastRole = raft.role;
    if (raft.leader !== this.lastLeader) {
      // Requests forwarded to the old leader may or may not have been done: the client hears so
      // now rather than at the deadline.
      if (this.lastLeader !== NONE) this.forwarder.failTo(this.lastLeader, ERR_LEADER_CHANGED);
      this.lastLeader = raft.leader;
      if (raft.leader === NONE) this.log.warn({ term: raft.term }, 'no leader');
      else this.log.info({ term: raft.term, leader: raft.leader.toString(16) }, 'leader elected');
      for (const l of [...this.leaderListeners]) l(BigInt(raft.leader));
      this.waiters.onLeaderChange();
      if (raft.leader !== NONE) this.publishSelf();
    }
  }

  private publishSelf(): void {
    if (this.stopped) return;
    this.changes.publishSelf(
      {
        id: String(this.id),
        name: this.cfg.name,
        peerUrls: this.cfg.peerUrls,
        clientUrls: this.cfg.advertiseClientUrls,
        logFormatMax: LOG_FORMAT_MAX,
      },
      (e) =>
        this.log.warn(
          { err: e instanceof Error ? e.message : String(e) },
          'publishing member failed',
        ),
    );
  }

  private checkLive(signal: AbortSignal | undefined): void {
    if (this.stopped) throw new RequestError(ERR_STOPPED);
    if (signal?.aborted) throw new RequestError(ERR_CANCELED);
  }

  /**
   * For observers (the dashboard): the ms left of lease `id` by this leader's clock, renewals
   * counted, without a leadership check; undefined on a follower, on a leader whose lease clock
   * is not yet in force, and for an unknown lease. TimeToLive is the checked answer.
   */
  leaseRemainingMs(id: LeaseId): number | undefined {
    const deadline = this.leases.deadlineMs(id);
    return deadline === undefined ? undefined : Math.max(0, deadline - this.clock.nowMs());
  }

  /** For observers and tests: the applied index. */
  get appliedIndex(): LogIndex {
    return this.replica.raft.log.applied;
  }
}

/** A peer answered a hash request with something else. */
const ERR_PEER_MALFORMED: EtcdError = { code: 'Unknown', message: 'tenure: malformed hash answer' };

/** Commands whose `nowMs` the leader stamps: they need its lease clock in force. */
function usesLeaseClock(op: ProposeOp): boolean {
  return op.op === 'propose' && (op.cmd.type === 'leaseGrant' || op.cmd.type === 'leaseKeepAlive');
}
