// What the client API (gRPC services and the JSON gateway) needs from a member. The API layer only
// translates between the wire and these calls; everything that decides (ordering, durability,
// leadership, lease time) sits behind this interface in the member (member.ts), which the server
// and the simulator both run. The API's own tests implement it with a single in-memory EtcdMachine.
import type { Command } from '../../core/state/command.js';
import type { EtcdMachine, EtcdResult } from '../../core/state/etcd-machine.js';
import type {
  LeaseId,
  LeaseKeepAliveResponse,
  LeaseTimeToLiveResponse,
} from '../../core/state/kv-types.js';
import type { Clock } from '../io.js';
import type { HashKvAnswer } from './hash-kv.js';

/** The version Status reports; etcd clients parse it as semver, and Go clients refuse < 3.2. */
export const SERVER_VERSION = '3.4.0';

/** A cluster member as MemberList shows it. IDs are uint64 on the wire. */
export interface MemberInfo {
  readonly id: bigint;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  readonly isLearner: boolean;
}

/** What Maintenance.Status reports of this node. */
export interface NodeStatus {
  /** The leader's member ID, 0n when none is known. */
  readonly leader: bigint;
  readonly raftIndex: number;
  readonly raftTerm: number;
  readonly raftAppliedIndex: number;
  /** Bytes the key space takes (etcd's dbSize and dbSizeInUse). */
  readonly dbSizeBytes: number;
  readonly dbSizeQuotaBytes: number;
  readonly isLearner: boolean;
  /** Semver; etcd clients reject < 3.2. */
  readonly version: string;
}

/** What Maintenance.Snapshot streams: the member's whole replicated state, as of now. */
export interface BackupSnapshot {
  /** A server snapshot (server-machine.ts): key space, leases, auth, alarms, member table. */
  readonly data: Uint8Array;
  /** The key space's revision in it. */
  readonly revision: number;
  /** The last log index applied to it. */
  readonly appliedIndex: number;
}

/**
 * The node behind the API. Every async call rejects with an `ApiError` (status.ts) wrapping an
 * etcd error (src/core/state/etcd-errors.ts: code and message byte-for-byte etcd's) for an
 * expected failure, and honours `signal` (ERR_CANCELED when it aborts).
 */
export interface KvBackend {
  readonly clusterId: bigint;
  /** The member's monotonic clock: the API layer's timers (watch progress, drains) run on it. */
  readonly clock: Clock;
  readonly memberId: bigint;
  /** The node's current Raft term, for response headers. */
  raftTerm(): number;
  /** True when this node knows a leader (the `hasleader` metadata check). */
  hasLeader(): boolean;
  /**
   * Replicate a command and resolve with the machine's result once it is applied on this node
   * (so a following local read sees it). Followers forward to the leader. Time-carrying fields
   * (`nowMs` of lease commands) are filled by the leader: pass 0.
   */
  propose(cmd: Command, signal?: AbortSignal): Promise<EtcdResult>;
  /**
   * Resolve once a linearizable read may be served from `machine` on this node (ReadIndex,
   * Raft thesis §6.4). Serializable reads skip this.
   */
  readBarrier(signal?: AbortSignal): Promise<void>;
  /**
   * The revision of everything this node knew to be committed when called, once applied here: a
   * key created at or before it was created before the call. Local, with no round trip, so it
   * may miss a commit this node has not heard of yet; a linearizable point is `readBarrier`.
   */
  knownCommittedRevision(signal?: AbortSignal): Promise<number>;
  /** The applied state: range queries, watch hubs, revision. Read-only for the API layer. */
  readonly machine: EtcdMachine;
  /** Answered by the leader, whose monotonic clock holds the lease deadlines. */
  leaseTimeToLive(
    id: LeaseId,
    keys: boolean,
    signal?: AbortSignal,
  ): Promise<LeaseTimeToLiveResponse>;
  /** One renewal: TTL 0 in the answer when the lease is unknown or expired. */
  leaseKeepAlive(id: LeaseId, signal?: AbortSignal): Promise<LeaseKeepAliveResponse>;
  status(): NodeStatus;
  members(): readonly MemberInfo[];
  memberAdd(
    peerUrls: readonly string[],
    isLearner: boolean,
    signal?: AbortSignal,
  ): Promise<MemberInfo>;
  memberRemove(id: bigint, signal?: AbortSignal): Promise<void>;
  /** New peer URLs for member `id` (etcd's MemberUpdate). */
  memberUpdate(id: bigint, peerUrls: readonly string[], signal?: AbortSignal): Promise<void>;
  /** Learner `id` becomes a voter, once it is in sync with the leader (etcd's MemberPromote). */
  memberPromote(id: bigint, signal?: AbortSignal): Promise<void>;
  /** On the leader only: make voter `target` the leader (etcd's Maintenance.MoveLeader). */
  moveLeader(target: bigint, signal?: AbortSignal): Promise<void>;
  /** Called when this node's view of the leader changes (to end `hasleader` streams). */
  onLeaderChange(listener: (leader: bigint) => void): () => void;
  /**
   * HashKV: the key space's hash at `revision` (0: the current one), computed in steps; rejects
   * with etcd's ErrCompacted or ErrFutureRev.
   */
  hashKv(revision: number, signal?: AbortSignal): Promise<HashKvAnswer>;
  /** The state Maintenance.Snapshot streams, encoded now (once: the caller streams the bytes). */
  backupSnapshot(): BackupSnapshot;
}
