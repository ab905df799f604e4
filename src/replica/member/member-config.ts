// A member's configuration (one typed config, each field with its meaning, unit and default), and
// its view of the outside world. The server's composition root (src/server/node.ts) fills both
// with real files, sockets and the process clock; the simulator (src/sim) with seeded ones.
import type { Mutants } from '../../core/base/mutants.js';
import type { NodeId } from '../../core/base/units.js';
import type { ConfState } from '../../core/raft/types.js';
import type { Clock, Disk, PeerChannel, Transport } from '../io.js';
import type { ReplicaObserver } from '../replica.js';
import type { LeaderDetectorKind } from '../leader-watch.js';

export interface InitialMember {
  readonly name: string;
  readonly peerUrls: readonly string[];
}

export interface MemberConfig {
  /** etcd's --name: shown in MemberList. */
  readonly name: string;
  /** The Raft node ID (etcd's member ID). */
  readonly id: NodeId;
  /** The cluster ID; a joining member learns it from the first peer that calls it. */
  readonly clusterId: () => bigint;
  /** The cluster's bootstrap configuration: every initial voter, or none for a joining member. */
  readonly initialConf: ConfState;
  /** Names and peer URLs of the bootstrap members, for MemberList before they publish. */
  readonly initialMembers: ReadonlyMap<NodeId, InitialMember>;
  /** Where peers reach this member. */
  readonly peerUrls: readonly string[];
  /** Where clients reach this member, published to the member table. */
  readonly advertiseClientUrls: readonly string[];
  /** etcd's --heartbeat-interval, in ms: one Raft tick. Default 100. */
  readonly heartbeatMs: number;
  /** etcd's --election-timeout, in ms; at least two heartbeats. Default 1000. */
  readonly electionMs: number;
  /**
   * A pause of the leader this long causes no election (issue 19): silence is judged by the
   * leader detector, and a dead leader is found by evidence instead (a refused reconnect).
   * Default 1.5 × electionMs (1,500 ms at etcd's timing); 0 turns it off (etcd's behaviour:
   * the randomized election timeout alone).
   */
  readonly pauseToleranceMs?: number;
  /** The detector that judges the leader's silence: φ accrual (default) or a fixed timeout. */
  readonly leaderDetector?: LeaderDetectorKind;
  /** Entries applied between snapshots (etcd's --snapshot-count). Default 100,000. */
  readonly snapshotCount: number;
  /** Entries kept after a snapshot, so slightly lagging followers need none. Default min(5000, snapshotCount). */
  readonly snapshotKeepEntries?: number;
  /** How long a request may wait for a leader, a forward or a commit, in ms. Default 7000. */
  readonly requestTimeoutMs: number;
  /** Seeds the member's randomness (election jitter, read contexts, request IDs): differ per run. */
  readonly seed: number;
  /** Entries per append message (RaftOptions); the simulator varies it. */
  readonly entriesPerAppendMax?: number;
  /** Appends in flight per follower (RaftOptions); the simulator varies it. */
  readonly inflightAppendsMax?: number;
  /**
   * Whether the leader checkpoints the remaining TTL of leases that missed a renewal, so that a
   * new leader continues them instead of granting the full TTL again (lease-clock.ts). Default
   * true; tenure's --lease-checkpoint, or etcd's --experimental-enable-lease-checkpoint.
   */
  readonly leaseCheckpoint?: boolean;
  /** Planted bugs for the simulator's mutation runs; never set in production. */
  readonly mutants?: Mutants;
}

/** The default pause tolerance, as a multiple of the election timeout. */
export const PAUSE_TOLERANCE_ELECTIONS = 1.5;

export const MEMBER_DEFAULTS = {
  heartbeatMs: 100,
  electionMs: 1000,
  // etcd 3.4's default (--snapshot-count 100000). A snapshot serializes the whole store on the
  // main thread; at 10,000 one landed in most benchmark workloads as a stall of 100-400 ms.
  snapshotCount: 100_000,
  requestTimeoutMs: 7000,
  leaseCheckpoint: true,
} as const;

/** Things worth a log line. */
export interface MemberLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Everything a member does to the outside world goes through these (TigerBeetle-style). */
export interface MemberIo {
  readonly clock: Clock;
  /** Raft messages to peers. */
  readonly transport: Transport;
  /** Request forwarding frames to peers, and what peers' clocks last said. */
  readonly peers: PeerChannel;
  readonly disk: Disk;
  readonly log: MemberLog;
  /**
   * Told when the member meets something it must not go past (a log entry in a format it does
   * not read): the server ends the process. The member has already logged why.
   */
  readonly fatal?: (e: Error) => void;
  /**
   * Watches the replica: the simulator's checkers, and the server's metrics (apply durations,
   * soft-state changes: src/server/metrics).
   */
  readonly observer?: ReplicaObserver;
}
