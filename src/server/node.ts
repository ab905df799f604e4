// One tenure member: the Replica loop (src/replica) over a file disk and the TCP peer transport,
// replicating a ServerMachine (the etcd key space and the member table), and the decisions that
// only the leader makes: stamping lease commands with its monotonic clock, refreshing every
// lease when it takes over, and proposing revokes for leases its clock says have expired
// (reference b.9). Implements KvBackend, which the client API (src/server/api) is written on.
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert } from '../core/base/assert.js';
import { nodeId, NONE, type LogIndex, type NodeId, type Term } from '../core/base/units.js';
import type { Command } from '../core/state/command.js';
import type { EtcdResult } from '../core/state/etcd-machine.js';
import { EtcdMachine } from '../core/state/etcd-machine.js';
import type { EtcdError } from '../core/state/etcd-errors.js';
import {
  ERR_CANCELED,
  ERR_LEADER_CHANGED,
  ERR_MEMBER_NOT_FOUND,
  ERR_NO_LEADER,
  ERR_NOT_LEADER,
  ERR_PEER_URL_EXIST,
  ERR_REQUEST_TOO_LARGE,
  ERR_STOPPED,
  ERR_TIMEOUT,
  ERR_TOO_MANY_REQUESTS,
} from '../core/state/etcd-errors.js';
import type {
  LeaseId,
  LeaseKeepAliveResponse,
  LeaseTimeToLiveResponse,
} from '../core/state/kv-types.js';
import { PROPOSAL_BYTES_MAX } from '../core/raft/limits.js';
import { Replica, type ProposalOutcome, type ReadOutcome } from '../replica/replica.js';
import type { Clock } from '../replica/io.js';
import type { KvBackend, MemberInfo, NodeStatus } from './api/backend.js';
import { ApiError, statusOf } from './api/status.js';
import { monotonicClock } from './clock.js';
import { FileDisk } from './file-disk.js';
import { Forwarder, type ForwardAnswer, type ForwardOp } from './forward.js';
import { clusterIdOf, hexId, memberIdOf } from './member-id.js';
import { PeerTransport, type PeerAddress, type PeerEvent } from './peer-transport.js';
import {
  encodeEtcdEntry,
  encodeMemberEntry,
  ServerMachine,
  type MemberRecord,
  type ServerResult,
} from './server-machine.js';

/** The version Status reports; etcd clients parse it as semver and reject < 3.2. */
export const SERVER_VERSION = '3.4.0';

export interface InitialMember {
  readonly name: string;
  readonly peerUrls: readonly string[];
}

export interface NodeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface NodeConfig {
  readonly name: string;
  readonly dataDir: string;
  /** Where peers reach us (the address we listen on for peers). */
  readonly listenPeer: PeerAddress;
  /** Advertised to clients in MemberList. */
  readonly advertiseClientUrls: readonly string[];
  readonly initialCluster: readonly InitialMember[];
  readonly initialClusterState: 'new' | 'existing';
  readonly initialClusterToken: string;
  /** etcd's --heartbeat-interval and --election-timeout, in ms. */
  readonly heartbeatMs: number;
  readonly electionMs: number;
  /** Entries applied between snapshots (etcd's --snapshot-count). */
  readonly snapshotCount: number;
  /** How long a request may wait for a leader, a forward or a commit. */
  readonly requestTimeoutMs: number;
  readonly log: NodeLogger;
  readonly clock?: Clock;
}

export const NODE_DEFAULTS = {
  heartbeatMs: 100,
  electionMs: 1000,
  // etcd 3.4's default (--snapshot-count 100000). A snapshot serializes the whole store on the
  // main thread; at 10,000 one landed in most benchmark workloads as a stall of 100-400 ms.
  snapshotCount: 100_000,
  requestTimeoutMs: 7000,
} as const;

/** The leader checks lease deadlines this often (etcd: 500 ms). */
const LEASE_EXPIRY_CHECK_MS = 500;
/** Revokes proposed per check at most (etcd rate-limits to 1000/s). */
const LEASE_REVOKES_PER_CHECK_MAX = 500;

/** Commands whose `nowMs` the leader stamps: they need its lease clock in force. */
function usesLeaseClock(op: ProposeOp): boolean {
  return op.op === 'propose' && (op.cmd.type === 'leaseGrant' || op.cmd.type === 'leaseKeepAlive');
}

type ProposeOp = Extract<ForwardOp, { op: 'propose' | 'member' }>;

interface AppliedWaiter {
  readonly index: number;
  readonly resolve: () => void;
}

/** Host and port of an http:// URL, as the peer transport wants them. */
export function urlAddress(url: string): PeerAddress {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/** The file in the data dir that records which cluster the member belongs to. */
const CLUSTER_ID_FILE = 'cluster-id';
/** The member ID the data dir was created for; a restart that derives another is refused. */
const MEMBER_ID_FILE = 'member-id';

/**
 * This member's ID. The data dir's record wins once it exists (a restart keeps its identity
 * whatever the flags say). A first start computes it as etcd does for a bootstrap member, from
 * the peer URLs and --initial-cluster-token; a member joining an existing cluster computes it
 * from its peer URLs alone, as MemberAdd did, since `etcdctl member add` prints no token.
 */
function resolveMemberId(cfg: NodeConfig, peerUrls: readonly string[]): NodeId {
  const file = join(cfg.dataDir, MEMBER_ID_FILE);
  if (existsSync(file)) {
    const recorded = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{1,12}$/.test(recorded))
      throw new Error(`${file} is damaged ('${recorded}'); restore it or use a fresh --data-dir`);
    return nodeId(parseInt(recorded, 16));
  }
  const id =
    cfg.initialClusterState === 'new'
      ? memberIdOf(peerUrls, cfg.initialClusterToken)
      : memberIdOf(peerUrls, JOINED_MEMBER_TOKEN);
  mkdirSync(cfg.dataDir, { recursive: true });
  writeFileSync(file, `${hexId(id)}\n`);
  return id;
}

/** The token in the IDs of members added at run time (MemberAdd and the joiner agree on it). */
const JOINED_MEMBER_TOKEN = '';

export class EtcdNode implements KvBackend {
  private cid: bigint;
  readonly memberId: bigint;
  readonly machine: EtcdMachine;
  private readonly id: NodeId;
  private readonly selfPeerUrls: readonly string[];
  private readonly sm: ServerMachine;
  private readonly clock: Clock;
  private replica!: Replica<ServerResult>;
  private transport: PeerTransport | undefined;
  private readonly forwarder: Forwarder;
  private readonly log: NodeLogger;
  private stopped = false;
  private lastLeader: NodeId = NONE;
  private lastRole = 'follower';
  private readonly leaderListeners = new Set<(leader: bigint) => void>();
  private readonly leaderWaiters = new Set<() => void>();
  private appliedWaiters: AppliedWaiter[] = [];
  /** The term whose leader has refreshed every lease: only then may it expire leases. */
  private leaseReadyTerm: Term | 0 = 0;
  private refreshingTerm: Term | 0 = 0;
  /**
   * Renewals this leader granted in its current term, as deadlines on its clock. Renewals are
   * not written to the log (etcd's lessor does the same): a new leader refreshes every lease to
   * a full TTL plus an election timeout from its own takeover, which is after any renewal the
   * old leader could still grant (CheckQuorum makes it step down first).
   */
  private readonly renewals = new Map<LeaseId, number>();
  private readonly revoking = new Set<LeaseId>();
  private cancelExpiry: (() => void) | undefined;
  private disk: FileDisk | undefined;
  private published = false;
  private readonly initialIds: ReadonlyMap<NodeId, InitialMember>;

  private constructor(private readonly cfg: NodeConfig) {
    this.clock = cfg.clock ?? monotonicClock;
    this.log = cfg.log;
    const self = cfg.initialCluster.find((m) => m.name === cfg.name);
    if (!self)
      throw new Error(`--initial-cluster has no member named '${cfg.name}' (--name must be one)`);
    this.selfPeerUrls = self.peerUrls;
    this.id = resolveMemberId(cfg, self.peerUrls);
    this.memberId = BigInt(this.id);
    const ids = new Map<NodeId, InitialMember>();
    for (const m of cfg.initialCluster) {
      const id = memberIdOf(m.peerUrls, cfg.initialClusterToken);
      if (ids.has(id)) throw new Error(`--initial-cluster lists peer URLs ${m.peerUrls[0]} twice`);
      ids.set(id, m);
    }
    this.initialIds = ids;
    this.cid = clusterIdOf([...ids.keys()], cfg.initialClusterToken);
    this.machine = new EtcdMachine();
    this.sm = new ServerMachine(this.machine);
    this.forwarder = new Forwarder(
      (to, payload) => this.transport?.sendApp(to, payload),
      (op) => this.serveForwarded(op),
      (e) =>
        this.log.error(
          { err: e instanceof Error ? e.stack : String(e) },
          'forwarded request failed',
        ),
    );
  }

  /** Recover from the data directory, listen for peers and join the cluster. */
  static async start(cfg: NodeConfig): Promise<EtcdNode> {
    const n = new EtcdNode(cfg);
    try {
      await n.open();
    } catch (e) {
      // A damaged WAL or a member-ID mismatch: release the peer port and the files.
      n.disk?.close();
      await n.transport?.close();
      throw e;
    }
    return n;
  }

  private async open(): Promise<void> {
    const cfg = this.cfg;
    const peers = new Map<NodeId, PeerAddress>();
    for (const [id, m] of this.initialIds) {
      const url = m.peerUrls[0];
      assert(url !== undefined, 'member without peer URL');
      peers.set(id, urlAddress(url));
    }
    // The cluster ID is fixed when the data dir is first used: computed from --initial-cluster
    // for a new cluster, adopted from the cluster for a member that joins an existing one.
    const idFile = join(cfg.dataDir, CLUSTER_ID_FILE);
    mkdirSync(cfg.dataDir, { recursive: true });
    let known: string | undefined;
    if (existsSync(idFile)) {
      known = readFileSync(idFile, 'utf8').trim();
      if (!/^[0-9a-f]+$/.test(known))
        throw new Error(
          `${idFile} is damaged ('${known}'); restore it or start with a fresh --data-dir`,
        );
    } else if (cfg.initialClusterState === 'new') {
      known = hexId(this.cid);
      writeFileSync(idFile, `${known}\n`);
    }
    this.cid = known === undefined ? 0n : BigInt(`0x${known}`);
    const transport = await PeerTransport.start({
      clusterId: known,
      onClusterId: (id) => {
        this.cid = BigInt(`0x${id}`);
        writeFileSync(idFile, `${id}\n`);
        this.log.info({ clusterId: id }, 'joined cluster');
      },
      self: this.id,
      listen: cfg.listenPeer,
      advertise: urlAddress(
        this.selfPeerUrls[0] ?? `http://${cfg.listenPeer.host}:${cfg.listenPeer.port}`,
      ),
      peers,
      onMessage: (m) => this.replica.receive(m),
      onApp: (from, payload) => this.forwarder.receive(from, payload),
      onEvent: (e) => this.onPeerEvent(e),
    });
    this.transport = transport;
    const disk = new FileDisk(cfg.dataDir, {
      onFatal: (e) => {
        this.log.error({ err: e.message }, 'disk failure; stopping (fail-stop)');
        process.exit(70);
      },
    });
    this.disk = disk;
    this.sm.onMembersChanged = () => this.syncPeers();
    const tickMs = cfg.heartbeatMs;
    // A joining member (state "existing") starts with no configuration and learns it from the
    // leader's log or snapshot.
    const initialConf =
      cfg.initialClusterState === 'new'
        ? { voters: [...this.initialIds.keys()], learners: [] }
        : { voters: [], learners: [] };
    this.replica = new Replica<ServerResult>(
      {
        id: this.id,
        initialConf,
        tickMs,
        electionTicks: Math.max(2, Math.round(cfg.electionMs / tickMs)),
        heartbeatTicks: 1,
        snapshotEntries: cfg.snapshotCount,
        snapshotKeepEntries: Math.min(5000, cfg.snapshotCount),
        // Read contexts and election jitter must differ per run of the process (replica.ts).
        seed: randomInt(1, 2 ** 47),
        batchReads: true,
        leaderSendsBeforeSync: true,
      },
      this.sm,
      this.clock,
      transport,
      disk,
      {
        // Observers run inside the Ready loop, before advance(): anything that proposes or
        // answers clients waits for the loop to finish.
        onSoftState: () => setImmediate(() => this.onSoftState()),
        onApply: (_id, e) => this.onApplied(e.index),
        // Entries that arrive inside a snapshot are applied without onApply.
        onRestoreSnapshot: (_id, snap) => this.onApplied(snap.index),
      },
    );
    this.cancelExpiry = this.clock.every(LEASE_EXPIRY_CHECK_MS, () => this.expireLeases());
    this.log.info(
      {
        name: cfg.name,
        memberId: hexId(this.memberId),
        clusterId: hexId(this.clusterId),
        appliedIndex: this.replica.raft.log.applied,
        revision: this.machine.revision,
      },
      'member started',
    );
  }

  // ---- KvBackend ----

  get clusterId(): bigint {
    return this.cid;
  }

  raftTerm(): number {
    return this.replica.raft.term;
  }

  hasLeader(): boolean {
    return this.replica.raft.leader !== NONE;
  }

  async propose(cmd: Command, signal?: AbortSignal): Promise<EtcdResult> {
    const r = await this.proposeEntry({ op: 'propose', cmd }, signal);
    return r as EtcdResult;
  }

  async readBarrier(signal?: AbortSignal): Promise<void> {
    const deadline = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    for (;;) {
      this.checkLive(signal);
      if (!this.hasLeader()) {
        await this.waitLeader(deadline, signal);
        continue;
      }
      let forget: () => void = () => {};
      const o = await this.withDeadline(
        new Promise<ReadOutcome>((resolve) => (forget = this.replica.read(resolve))),
        deadline,
        signal,
      ).catch((e: unknown) => {
        forget();
        throw e;
      });
      if (o.ok) return;
      if (o.reason === 'busy') throw new ApiError(ERR_TOO_MANY_REQUESTS);
      // notLeader: the leader changed before it confirmed; try again with the next one.
    }
  }

  async leaseTimeToLive(
    id: LeaseId,
    keys: boolean,
    signal?: AbortSignal,
  ): Promise<LeaseTimeToLiveResponse> {
    const v = await this.onLeader({ op: 'timeToLive', id, keys }, signal);
    return v as LeaseTimeToLiveResponse;
  }

  async leaseKeepAlive(id: LeaseId, signal?: AbortSignal): Promise<LeaseKeepAliveResponse> {
    return (await this.onLeader({ op: 'keepAlive', id }, signal)) as LeaseKeepAliveResponse;
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
      const initial = this.initialIds.get(id);
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

  async memberAdd(
    peerUrls: readonly string[],
    isLearner: boolean,
    signal?: AbortSignal,
  ): Promise<MemberInfo> {
    return (await this.onLeader({ op: 'memberAdd', peerUrls, isLearner }, signal)) as MemberInfo;
  }

  async memberRemove(id: bigint, signal?: AbortSignal): Promise<void> {
    await this.onLeader({ op: 'memberRemove', id }, signal);
  }

  /** On the leader: record the member's URLs, then add it to the configuration. */
  private async memberAddLocal(
    peerUrls: readonly string[],
    isLearner: boolean,
    signal?: AbortSignal,
  ): Promise<MemberInfo> {
    const id = memberIdOf(peerUrls, JOINED_MEMBER_TOKEN);
    const conf = this.replica.raft.conf();
    if (conf.voters.includes(id) || conf.learners.includes(id))
      throw new ApiError(ERR_PEER_URL_EXIST);
    const record: MemberRecord = { id: String(id), name: '', peerUrls, clientUrls: [] };
    await this.proposeEntry({ op: 'member', cmd: { type: 'memberSet', member: record } }, signal);
    // The new member learns the configuration from a snapshot, not from a log that starts
    // with the implicit bootstrap configuration.
    this.replica.snapshotNow();
    await this.changeConf({ type: isLearner ? 'addLearner' : 'addVoter', nodeId: id }, signal);
    return { id: BigInt(id), name: '', peerUrls, clientUrls: [], isLearner };
  }

  private async memberRemoveLocal(id: bigint, signal?: AbortSignal): Promise<void> {
    const conf = this.replica.raft.conf();
    const nid = Number(id) as NodeId;
    if (!conf.voters.includes(nid) && !conf.learners.includes(nid))
      throw new ApiError(ERR_MEMBER_NOT_FOUND);
    // The record first: once the change is in, a leader removing itself no longer leads.
    await this.proposeEntry(
      { op: 'member', cmd: { type: 'memberDelete', id: String(nid) } },
      signal,
    );
    await this.changeConf({ type: 'removeNode', nodeId: nid }, signal);
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    this.leaderListeners.add(listener);
    return () => this.leaderListeners.delete(listener);
  }

  // ---- Lifecycle ----

  /** Stop taking part: no more ticks, messages or applies. Data on disk stays as it is. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelExpiry?.();
    this.replica.stop(true);
    this.forwarder.close(ERR_STOPPED);
    this.disk?.close();
    for (const w of this.appliedWaiters) w.resolve();
    this.appliedWaiters = [];
    for (const w of this.leaderWaiters) w();
    await this.transport?.close();
  }

  get name(): string {
    return this.cfg.name;
  }

  get raftId(): NodeId {
    return this.id;
  }

  get isLeader(): boolean {
    return this.replica.raft.role === 'leader';
  }

  // ---- Writes ----

  /** Propose on this node when it leads, else forward to the leader; resolve once applied here. */
  private async proposeEntry(
    op: ProposeOp,
    signal: AbortSignal | undefined,
  ): Promise<ServerResult> {
    // A proposal is not idempotent: "leader changed" goes to the client, never into a retry.
    return (await this.viaLeader(op, signal, false)) as ServerResult;
  }

  /**
   * Run `op` where the leader is: here (serveForwarded) when this node leads, else on the leader
   * over the peer connection, retrying while leadership moves, within the request timeout. A
   * forwarded write resolves only once applied here too, so a local read after it sees it.
   * `retryLeaderChanged`: the op is safe to repeat (queries, member changes that refuse to run
   * twice), so an answer lost to a leader change is asked again.
   */
  private async viaLeader(
    op: ForwardOp,
    signal: AbortSignal | undefined,
    retryLeaderChanged: boolean,
  ): Promise<unknown> {
    const deadline = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    for (;;) {
      this.checkLive(signal);
      const raft = this.replica.raft;
      let a: ForwardAnswer;
      if (raft.role === 'leader') {
        a = await this.withDeadline(this.serveForwarded(op), deadline, signal);
        if (!a.ok && this.stopped) throw new ApiError(ERR_STOPPED);
      } else if (raft.leader === NONE) {
        await this.waitLeader(deadline, signal);
        continue;
      } else {
        a = await this.forwarder.request(
          raft.leader,
          op,
          Math.max(1, deadline - this.clock.nowMs()),
          signal,
        );
        if (a.ok && (op.op === 'propose' || op.op === 'member'))
          await this.waitApplied(a.index, deadline, signal);
      }
      if (a.ok) return a.value;
      const retry =
        a.error.message === ERR_NOT_LEADER.message ||
        (retryLeaderChanged && a.error.message === ERR_LEADER_CHANGED.message);
      if (!retry) throw new ApiError(a.error);
      await this.sleepUntilChange(deadline, signal);
    }
  }

  /** Encode for the log, stamping lease commands with this leader's clock (the only clock lease deadlines are kept on). */
  private encodeOp(op: ProposeOp): Uint8Array {
    if (op.op === 'member') return encodeMemberEntry(op.cmd);
    const c = op.cmd;
    if (c.type === 'leaseGrant' || c.type === 'leaseKeepAlive' || c.type === 'leaseRefreshAll')
      return encodeEtcdEntry({ ...c, nowMs: this.clock.nowMs() });
    return encodeEtcdEntry(c);
  }

  private proposeLocal(op: ProposeOp): Promise<ProposalOutcome<ServerResult>> {
    const data = this.encodeOp(op);
    // The API layer admits requests by their wire size; the log entry (hex in tagged JSON) may
    // still be over the core's limit, which is the client's request being too large.
    if (data.length > PROPOSAL_BYTES_MAX)
      return Promise.reject(new ApiError(ERR_REQUEST_TOO_LARGE));
    return new Promise((resolve) => this.replica.propose(data, resolve));
  }

  /** The leader's side of a forwarded request. */
  private async serveForwarded(op: ForwardOp): Promise<ForwardAnswer> {
    if (this.stopped) return { ok: false, error: ERR_STOPPED };
    if (this.replica.raft.role !== 'leader') return { ok: false, error: ERR_NOT_LEADER };
    if (op.op === 'memberAdd') {
      const value = await this.memberAddLocal(op.peerUrls, op.isLearner);
      return { ok: true, value, index: this.replica.raft.log.applied };
    }
    if (op.op === 'memberRemove') {
      await this.memberRemoveLocal(op.id);
      return { ok: true, value: null, index: this.replica.raft.log.applied };
    }
    const deadline = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    if (op.op === 'keepAlive') {
      if (!(await this.leaseClockReady(deadline, undefined)))
        return { ok: false, error: ERR_NOT_LEADER };
      return { ok: true, value: this.renewLease(op.id), index: this.replica.raft.log.applied };
    }
    if (op.op === 'timeToLive') {
      // Deadlines are on this leader's clock only once its refresh applied; and a deposed
      // leader must not report a lease the new one revoked (ReadIndex confirms we lead).
      if (!(await this.leaseClockReady(deadline, undefined)))
        return { ok: false, error: ERR_NOT_LEADER };
      await this.readBarrier();
      const now = this.clock.nowMs();
      const ttl = this.machine.leaseTimeToLive(op.id, now, op.keys);
      const renewed = this.renewals.get(op.id);
      const value =
        ttl.ttlSeconds >= 0 && renewed !== undefined
          ? { ...ttl, ttlSeconds: Math.max(ttl.ttlSeconds, Math.trunc((renewed - now) / 1000)) }
          : ttl;
      return { ok: true, value, index: this.replica.raft.log.applied };
    }
    if (usesLeaseClock(op) && !(await this.leaseClockReady(deadline, undefined)))
      return { ok: false, error: ERR_NOT_LEADER };
    const o = await this.proposeLocal(op);
    if (o.ok) return { ok: true, value: o.result, index: o.index };
    if (o.reason === 'notLeader') return { ok: false, error: ERR_NOT_LEADER };
    if (o.reason === 'busy') return { ok: false, error: ERR_TOO_MANY_REQUESTS };
    return { ok: false, error: ERR_LEADER_CHANGED };
  }

  /** A query or member change, run on the leader (safe to ask again after a leader change). */
  private onLeader(op: ForwardOp, signal?: AbortSignal): Promise<unknown> {
    return this.viaLeader(op, signal, true);
  }

  /** Propose a configuration change and return once it is committed and applied here. */
  private async changeConf(
    cc: { type: 'addVoter' | 'addLearner' | 'removeNode'; nodeId: NodeId },
    signal?: AbortSignal,
  ): Promise<void> {
    const deadline = this.clock.nowMs() + this.cfg.requestTimeoutMs;
    const done = (): boolean => {
      // The configuration of the committed log, not conf() (which counts appended entries).
      const raft = this.replica.raft;
      const c = raft.confAtIndex(raft.log.applied);
      const inVoters = c.voters.includes(cc.nodeId);
      const inLearners = c.learners.includes(cc.nodeId);
      if (cc.type === 'removeNode') return !inVoters && !inLearners;
      return cc.type === 'addVoter' ? inVoters : inLearners;
    };
    while (!done()) {
      this.checkLive(signal);
      if (this.replica.raft.role !== 'leader') throw new ApiError(ERR_NOT_LEADER);
      const index = this.replica.proposeConfChange(cc);
      if (index === undefined) await this.sleepUntilChange(deadline, signal);
      else await this.waitApplied(index, deadline, signal);
    }
  }

  // ---- Leases: the leader's clock ----

  private expireLeases(): void {
    const raft = this.replica.raft;
    if (this.stopped || raft.role !== 'leader') return;
    if (this.leaseReadyTerm !== raft.term) {
      this.ensureLeaseRefresh();
      return;
    }
    const now = this.clock.nowMs();
    for (const id of this.renewals.keys())
      if (this.machine.leaseInfo(id) === undefined) this.renewals.delete(id);
    const ids = this.machine
      .expiredLeases(now, 4 * LEASE_REVOKES_PER_CHECK_MAX)
      .filter((id) => (this.renewals.get(id) ?? -Infinity) <= now)
      .slice(0, LEASE_REVOKES_PER_CHECK_MAX);
    for (const id of ids) {
      if (this.revoking.has(id)) continue;
      this.revoking.add(id);
      // Conditional: a renewal that applies first (proposed before our clock passed the
      // deadline) wins, and the revoke does nothing.
      this.propose({ type: 'leaseRevoke', id, ifExpiredAtMs: now })
        .catch((e: unknown) => {
          if (statusOf(e) === null) this.log.warn({ err: String(e) }, 'lease revoke failed');
        })
        .finally(() => this.revoking.delete(id));
    }
  }

  /**
   * A renewal on the leader: TTL 0 for an unknown lease, one being revoked, or one whose
   * deadline has passed (its revoke is coming; reference b.9); else a new deadline of now + TTL.
   */
  private renewLease(id: LeaseId): LeaseKeepAliveResponse {
    const header = { revision: this.machine.revision };
    const info = this.machine.leaseInfo(id);
    const now = this.clock.nowMs();
    if (info === undefined || this.revoking.has(id)) return { header, id, ttlSeconds: 0 };
    if (Math.max(info.deadlineMs, this.renewals.get(id) ?? -Infinity) <= now)
      return { header, id, ttlSeconds: 0 };
    this.renewals.set(id, now + info.ttlSeconds * 1000);
    return { header, id, ttlSeconds: info.ttlSeconds };
  }

  /**
   * A new leader gives every lease a fresh TTL on its own clock before it may expire, renew,
   * grant or report any (reference b.9); until that is applied, lease deadlines in the state
   * are another process's clock readings. Retried until it lands in this term.
   */
  private ensureLeaseRefresh(): void {
    const raft = this.replica.raft;
    if (raft.role !== 'leader' || this.leaseReadyTerm === raft.term) return;
    if (this.refreshingTerm === raft.term) return;
    const t = raft.term;
    this.refreshingTerm = t;
    const data = encodeEtcdEntry({
      type: 'leaseRefreshAll',
      nowMs: this.clock.nowMs(),
      extraMs: this.cfg.electionMs,
    });
    this.replica.propose(data, (o) => {
      if (this.refreshingTerm === t) this.refreshingTerm = 0;
      if (o.ok && this.replica.raft.term === t) {
        this.leaseReadyTerm = t;
        // The refresh gave every lease a full TTL from now: older renewals are moot.
        this.renewals.clear();
      }
    });
  }

  /** On the leader: wait until its lease clock is in force. False if it stopped leading. */
  private async leaseClockReady(deadline: number, signal?: AbortSignal): Promise<boolean> {
    for (;;) {
      const raft = this.replica.raft;
      if (raft.role !== 'leader') return false;
      if (this.leaseReadyTerm === raft.term) return true;
      this.ensureLeaseRefresh();
      await this.sleepUntilChange(deadline, signal);
    }
  }

  // ---- Events ----

  private onSoftState(): void {
    const raft = this.replica.raft;
    if (raft.role === 'leader' && this.lastRole !== 'leader') {
      this.log.info({ term: raft.term }, 'became leader');
      this.ensureLeaseRefresh();
    }
    if (raft.role !== 'leader' && this.lastRole === 'leader')
      this.log.info({ term: raft.term, leader: hexId(raft.leader) }, 'stepped down');
    this.lastRole = raft.role;
    if (raft.leader !== this.lastLeader) {
      // Requests forwarded to the old leader may or may not have been applied: the client
      // hears so now (etcd: "leader changed") rather than at the deadline.
      if (this.lastLeader !== NONE) this.forwarder.failTo(this.lastLeader, ERR_LEADER_CHANGED);
      this.lastLeader = raft.leader;
      if (raft.leader === NONE) this.log.warn({ term: raft.term }, 'no leader');
      else this.log.info({ term: raft.term, leader: hexId(raft.leader) }, 'leader elected');
      for (const l of [...this.leaderListeners]) l(BigInt(raft.leader));
      for (const w of [...this.leaderWaiters]) w();
      this.leaderWaiters.clear();
      if (raft.leader !== NONE) this.publishSelf();
    }
  }

  /** Runs for every applied entry: one pass over the waiters, and none while nobody waits. */
  private onApplied(index: LogIndex): void {
    if (this.appliedWaiters.length === 0) return;
    let ready: AppliedWaiter[] | undefined;
    let keep = 0;
    for (const w of this.appliedWaiters) {
      if (w.index <= index) (ready ??= []).push(w);
      else this.appliedWaiters[keep++] = w;
    }
    if (ready === undefined) return;
    this.appliedWaiters.length = keep;
    for (const w of ready) w.resolve();
  }

  private onPeerEvent(e: PeerEvent): void {
    if (e.type === 'refused') this.log.warn({ reason: e.reason }, 'peer connection refused');
    else if (e.type === 'dropped')
      this.log.warn({ peer: hexId(e.peer), messages: e.messages }, 'peer queue full');
  }

  /**
   * Tell the cluster our name and client URLs (etcd "publishes" member attributes the same
   * way), once per run, so MemberList shows where clients reach us. The leader proposes it.
   */
  private publishSelf(): void {
    if (this.published) return;
    const mine = this.sm.memberTable().get(String(this.id));
    const want: MemberRecord = {
      id: String(this.id),
      name: this.cfg.name,
      peerUrls: this.selfPeerUrls,
      clientUrls: this.cfg.advertiseClientUrls,
    };
    if (mine && JSON.stringify(mine) === JSON.stringify(want)) {
      this.published = true;
      return;
    }
    this.published = true;
    this.proposeEntry({ op: 'member', cmd: { type: 'memberSet', member: want } }, undefined).catch(
      (e: unknown) => {
        this.published = false;
        this.log.warn(
          { err: e instanceof Error ? e.message : String(e) },
          'publishing member failed',
        );
      },
    );
  }

  private syncPeers(): void {
    if (!this.transport) return;
    for (const rec of this.sm.memberTable().values()) {
      const url = rec.peerUrls[0];
      if (url !== undefined) this.transport.addPeer(Number(rec.id) as NodeId, urlAddress(url));
    }
  }

  // ---- Waiting ----

  private checkLive(signal: AbortSignal | undefined): void {
    if (this.stopped) throw new ApiError(ERR_STOPPED);
    if (signal?.aborted) throw new ApiError(ERR_CANCELED);
  }

  private waitLeader(deadline: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.hasLeader()) return Promise.resolve();
    return this.waitFor(
      (wake) => {
        this.leaderWaiters.add(wake);
        return () => this.leaderWaiters.delete(wake);
      },
      deadline,
      signal,
      ERR_NO_LEADER,
    );
  }

  /** Wait a heartbeat (a leader change or a commit usually follows), within the deadline. */
  private sleepUntilChange(deadline: number, signal: AbortSignal | undefined): Promise<void> {
    return this.waitFor(
      (wake) => this.clock.after(this.cfg.heartbeatMs, wake),
      deadline,
      signal,
      ERR_TIMEOUT,
    );
  }

  private waitApplied(index: number, deadline: number, signal?: AbortSignal): Promise<void> {
    if (this.replica.raft.log.applied >= index) return Promise.resolve();
    return this.waitFor(
      (wake) => {
        const w = { index, resolve: wake };
        this.appliedWaiters.push(w);
        return () => {
          this.appliedWaiters = this.appliedWaiters.filter((x) => x !== w);
        };
      },
      deadline,
      signal,
      ERR_TIMEOUT,
    );
  }

  /** Resolve when `arm`'s wake fires; reject at the deadline or on abort. */
  private waitFor(
    arm: (wake: () => void) => () => void,
    deadline: number,
    signal: AbortSignal | undefined,
    onTimeout: EtcdError,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err: EtcdError | undefined): void => {
        if (done) return;
        done = true;
        disarm();
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(new ApiError(err));
        else resolve();
      };
      const onAbort = (): void => finish(ERR_CANCELED);
      const disarm = arm(() => finish(this.stopped ? ERR_STOPPED : undefined));
      const cancelTimer = this.clock.after(Math.max(0, deadline - this.clock.nowMs()), () =>
        finish(onTimeout),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private withDeadline<T>(p: Promise<T>, deadline: number, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const cancel = this.clock.after(Math.max(0, deadline - this.clock.nowMs()), () =>
        reject(new ApiError(ERR_TIMEOUT)),
      );
      const onAbort = (): void => reject(new ApiError(ERR_CANCELED));
      signal?.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => {
          cancel();
          signal?.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          cancel();
          signal?.removeEventListener('abort', onAbort);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }
}
