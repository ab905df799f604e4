// The values that cross the Raft core's boundary: log entries, messages, persistent state,
// snapshots and the Ready batch. Plain data, discriminated on `type`.
import type { LogIndex, NodeId, Term } from '../base/units.js';

export type EntryType = 'normal' | 'conf';

export interface Entry {
  readonly index: LogIndex;
  readonly term: Term;
  readonly type: EntryType;
  /** Opaque command bytes; empty for the leader's no-op (Raft thesis §6.4). */
  readonly data: Uint8Array;
}

/** A single-server membership change (Raft thesis §4.1). */
export interface ConfChange {
  readonly type: 'addVoter' | 'addLearner' | 'removeNode';
  readonly nodeId: NodeId;
}

/** Who takes part: voters decide elections and commitment; learners only receive the log. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/** What must be durable before any message that depends on it is sent (Raft §5.1, Figure 2). */
export interface HardState {
  readonly term: Term;
  readonly vote: NodeId;
  readonly commit: LogIndex;
}

export interface Snapshot {
  readonly index: LogIndex;
  readonly term: Term;
  readonly conf: ConfState;
  /** The application state at `index`, opaque to the core. */
  readonly data: Uint8Array;
}

interface Envelope {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: Term;
}

export type Message =
  | (Envelope & {
      readonly type: 'vote' | 'preVote';
      readonly lastIndex: LogIndex;
      readonly lastTerm: Term;
      /** Set by a leadership transfer: bypasses the leader-lease check (thesis §3.10). */
      readonly transfer: boolean;
    })
  | (Envelope & { readonly type: 'voteResp' | 'preVoteResp'; readonly reject: boolean })
  | (Envelope & {
      readonly type: 'app';
      readonly prevIndex: LogIndex;
      readonly prevTerm: Term;
      readonly entries: readonly Entry[];
      readonly commit: LogIndex;
    })
  | (Envelope & {
      readonly type: 'appResp';
      /** On success: the last index now matching the leader. On rejection: the rejected prevIndex. */
      readonly index: LogIndex;
      readonly reject: boolean;
      /** Fast backtracking (thesis §5.3 / etcd's findConflictByTerm): where to probe next. */
      readonly hintIndex: LogIndex;
      readonly hintTerm: Term;
    })
  | (Envelope & { readonly type: 'heartbeat'; readonly commit: LogIndex; readonly context: number })
  | (Envelope & { readonly type: 'heartbeatResp'; readonly context: number })
  | (Envelope & { readonly type: 'snap'; readonly snapshot: Snapshot })
  | (Envelope & { readonly type: 'readIndex'; readonly context: number })
  | (Envelope & {
      readonly type: 'readIndexResp';
      readonly context: number;
      readonly index: LogIndex;
    })
  | (Envelope & { readonly type: 'timeoutNow' });

export type MessageType = Message['type'];

/** A stable number per message type: the peer wire format's type byte and the event-hash tag. */
export const MESSAGE_TYPE_CODES: Readonly<Record<MessageType, number>> = {
  vote: 1,
  voteResp: 2,
  preVote: 3,
  preVoteResp: 4,
  app: 5,
  appResp: 6,
  heartbeat: 7,
  heartbeatResp: 8,
  snap: 9,
  readIndex: 10,
  readIndexResp: 11,
  timeoutNow: 12,
};

/** A linearizable read may be served once the applied index reaches `index` (thesis §6.4). */
export interface ReadState {
  readonly index: LogIndex;
  readonly context: number;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export interface SoftState {
  readonly leader: NodeId;
  readonly role: Role;
  /** The term the role and leader belong to. */
  readonly term: Term;
}

/**
 * Everything the replica loop must do, in order: persist `snapshot`, `entries` and `hardState`
 * (one sync), then send `messages`, then apply `committedEntries`, then call `advance()`.
 */
export interface Ready {
  readonly softState: SoftState | undefined;
  readonly hardState: HardState | undefined;
  readonly snapshot: Snapshot | undefined;
  readonly entries: readonly Entry[];
  /**
   * The persisted state must be synced before `messages` go out: there are entries, or the term
   * or vote changed (§3.8). A hard state that only moves the commit index need not be: a node
   * that loses it learns it again from the leader (etcd's raft.MustSync).
   */
  readonly mustSync: boolean;
  readonly committedEntries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly readStates: readonly ReadState[];
}

/** Expected refusals are values, not exceptions. */
export type ProposeResult =
  | { readonly ok: true; readonly index: LogIndex; readonly term: Term }
  | {
      readonly ok: false;
      readonly reason: 'notLeader' | 'transferring' | 'confChangePending' | 'tooLarge';
      readonly leader: NodeId;
    };
