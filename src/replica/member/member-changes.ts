// Member changes on the leader (etcd's MemberAdd, MemberRemove, MemberUpdate and MemberPromote),
// and each member's publication of its own name and client URLs. Single-server changes (Raft
// thesis §4.1): the member record goes into the log first, then the configuration change; a new
// member learns the configuration from a snapshot, never by replaying a log whose first
// configuration is the implicit bootstrap one.
import type { NodeId } from '../../core/base/units.js';
import {
  ERR_LEARNER_NOT_READY,
  ERR_MEMBER_NOT_FOUND,
  ERR_MEMBER_NOT_LEARNER,
  ERR_NOT_LEADER,
  ERR_PEER_URL_EXIST,
  ERR_TIMEOUT,
} from '../../core/state/etcd-errors.js';
import type { Replica } from '../replica.js';
import type { MemberInfo } from './backend.js';
import { JOINED_MEMBER_TOKEN, memberIdOf } from './member-id.js';
import { RequestError } from './request-error.js';
import type { MemberCommand, MemberRecord, ServerMachine, ServerResult } from './server-machine.js';
import type { Waiters } from './waiters.js';

export interface MemberChangesDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly sm: ServerMachine;
  readonly waiters: Waiters;
  readonly nowMs: () => number;
  readonly requestTimeoutMs: number;
  readonly heartbeatMs: number;
  /**
   * Put a member command in the log through the leader; resolves once applied here. A record of
   * a member the table has is taken for its publication: its peer URLs stay the table's.
   */
  readonly proposeMember: (cmd: MemberCommand, signal?: AbortSignal) => Promise<unknown>;
  /** On the leader: put a member command in the log as it is; resolves once applied. */
  readonly setMemberAsLeader: (cmd: MemberCommand, untilMs: number) => Promise<unknown>;
  readonly checkLive: (signal: AbortSignal | undefined) => void;
  /** On the leader: member `id`'s record once every entry in its log is applied. */
  readonly recordOf: (id: string) => MemberRecord | undefined;
  /** The peer URLs --initial-cluster gave a bootstrap member, for one not in the table yet. */
  readonly initialPeerUrls: (id: NodeId) => readonly string[];
}

/**
 * A learner is promoted only once its log matches at least this fraction of the leader's (etcd's
 * readyPercent, server/etcdserver/server.go isLearnerReady).
 */
export const LEARNER_READY_FRACTION = 0.9;

export class MemberChanges {
  private published = false;

  constructor(private readonly deps: MemberChangesDeps) {}

  /**
   * On the leader: record the member's URLs, then add it to the configuration. No step starts
   * once this member's clock reads `untilMs` (a forwarded request's deadline).
   */
  async add(
    peerUrls: readonly string[],
    isLearner: boolean,
    signal?: AbortSignal,
    untilMs = Infinity,
  ): Promise<MemberInfo> {
    const replica = this.deps.replica();
    const id = memberIdOf(peerUrls, JOINED_MEMBER_TOKEN);
    const conf = replica.raft.conf();
    if (conf.voters.includes(id) || conf.learners.includes(id))
      throw new RequestError(ERR_PEER_URL_EXIST);
    const record: MemberRecord = { id: String(id), name: '', peerUrls, clientUrls: [] };
    this.checkBefore(untilMs);
    await this.deps.proposeMember({ type: 'memberSet', member: record }, signal);
    // The new member learns the configuration from a snapshot, not from a log that starts
    // with the implicit bootstrap configuration.
    replica.snapshotNow();
    const cc = { type: isLearner ? ('addLearner' as const) : ('addVoter' as const), nodeId: id };
    await this.changeConf(cc, signal, untilMs);
    return { id: BigInt(id), name: '', peerUrls, clientUrls: [], isLearner };
  }

  /** On the leader: delete the member's record, then remove it from the configuration. */
  async remove(id: bigint, signal?: AbortSignal, untilMs = Infinity): Promise<void> {
    const conf = this.deps.replica().raft.conf();
    const nid = Number(id) as NodeId;
    if (!conf.voters.includes(nid) && !conf.learners.includes(nid))
      throw new RequestError(ERR_MEMBER_NOT_FOUND);
    // The record first: once the change is in, a leader removing itself no longer leads.
    this.checkBefore(untilMs);
    await this.deps.proposeMember({ type: 'memberDelete', id: String(nid) }, signal);
    await this.changeConf({ type: 'removeNode', nodeId: nid }, signal, untilMs);
  }

  /**
   * On the leader: give member `id` new peer URLs (etcd's UpdateMember). Only the member table
   * changes: the configuration is the same, and every member's transport dials the new address
   * once the record is applied (node.ts). etcd checks the same two things first
   * (membership/cluster.go ValidateConfigurationChange, ConfChangeUpdateNode).
   */
  async update(
    id: bigint,
    peerUrls: readonly string[],
    known: ReadonlyMap<string, { readonly name: string; readonly clientUrls: readonly string[] }>,
    signal?: AbortSignal,
    untilMs = Infinity,
  ): Promise<void> {
    const conf = this.deps.replica().raft.conf();
    const nid = Number(id) as NodeId;
    if (!conf.voters.includes(nid) && !conf.learners.includes(nid))
      throw new RequestError(ERR_MEMBER_NOT_FOUND);
    const table = this.deps.sm.memberTable();
    for (const m of [...conf.voters, ...conf.learners]) {
      if (m === nid) continue;
      const urls = table.get(String(m))?.peerUrls ?? this.deps.initialPeerUrls(m);
      if (urls.some((u) => peerUrls.includes(u))) throw new RequestError(ERR_PEER_URL_EXIST);
    }
    // The rest of the record stays: a member that has not published yet keeps the name it was
    // started with (MemberList shows it from --initial-cluster until then).
    // Not only the table's: a publication of the member may be in the log, not applied yet.
    const mine = this.deps.recordOf(String(nid));
    const shown = known.get(String(nid));
    const record: MemberRecord = {
      ...(mine ?? {
        id: String(nid),
        name: shown?.name ?? '',
        clientUrls: shown?.clientUrls ?? [],
      }),
      peerUrls: [...peerUrls],
    };
    this.checkBefore(untilMs);
    this.deps.checkLive(signal);
    // As it is: through proposeMember the leader would keep the table's peer URLs.
    await this.deps.setMemberAsLeader({ type: 'memberSet', member: record }, untilMs);
  }

  /**
   * On the leader: make learner `id` a voter (etcd's PromoteMember). Checked in etcd's order
   * (server.go promoteMember, isLearnerReady, then ValidateConfigurationChange): first that a
   * member the leader replicates to is in sync, which etcd asks of any member it has progress
   * for, then that it is a member, then that it is a learner.
   */
  async promote(id: bigint, signal?: AbortSignal, untilMs = Infinity): Promise<void> {
    const raft = this.deps.replica().raft;
    if (raft.role !== 'leader') throw new RequestError(ERR_NOT_LEADER);
    const nid = Number(id) as NodeId;
    const leaderMatch = raft.log.lastIndex();
    const match = nid === raft.id ? leaderMatch : raft.progressView().get(nid)?.match;
    if (match !== undefined && match < leaderMatch * LEARNER_READY_FRACTION)
      throw new RequestError(ERR_LEARNER_NOT_READY);
    const conf = raft.conf();
    if (conf.voters.includes(nid)) throw new RequestError(ERR_MEMBER_NOT_LEARNER);
    if (!conf.learners.includes(nid)) throw new RequestError(ERR_MEMBER_NOT_FOUND);
    await this.changeConf({ type: 'addVoter', nodeId: nid }, signal, untilMs);
  }

  private checkBefore(untilMs: number): void {
    if (this.deps.nowMs() >= untilMs) throw new RequestError(ERR_TIMEOUT);
  }

  /**
   * Tell the cluster our name and client URLs (etcd "publishes" member attributes the same way),
   * once per run, so MemberList shows where clients reach us. The leader proposes it.
   */
  publishSelf(want: MemberRecord, onError: (e: unknown) => void): void {
    if (this.published) return;
    const mine = this.deps.sm.memberTable().get(want.id);
    this.published = true;
    // Like etcd's publish (server.go), only the attributes: the peer URLs in the table are the
    // cluster's (MemberAdd, MemberUpdate), not whatever this member was started with. Ours may
    // lag the leader's, so the leader puts its own table's in (Member.publication).
    const record: MemberRecord = mine === undefined ? want : { ...want, peerUrls: mine.peerUrls };
    if (mine && JSON.stringify(mine) === JSON.stringify(record)) return;
    this.deps.proposeMember({ type: 'memberSet', member: record }).catch((e: unknown) => {
      this.published = false;
      onError(e);
    });
  }

  /** Propose a configuration change and return once it is committed and applied here. */
  private async changeConf(
    cc: { type: 'addVoter' | 'addLearner' | 'removeNode'; nodeId: NodeId },
    signal: AbortSignal | undefined,
    untilMs: number,
  ): Promise<void> {
    const deadline = Math.min(untilMs, this.deps.nowMs() + this.deps.requestTimeoutMs);
    const done = (): boolean => {
      // The configuration of the committed log, not conf() (which counts appended entries).
      const raft = this.deps.replica().raft;
      const c = raft.confAtIndex(raft.log.applied);
      const inVoters = c.voters.includes(cc.nodeId);
      const inLearners = c.learners.includes(cc.nodeId);
      if (cc.type === 'removeNode') return !inVoters && !inLearners;
      return cc.type === 'addVoter' ? inVoters : inLearners;
    };
    while (!done()) {
      this.deps.checkLive(signal);
      const replica = this.deps.replica();
      if (replica.raft.role !== 'leader') throw new RequestError(ERR_NOT_LEADER);
      this.checkBefore(untilMs);
      const index = replica.proposeConfChange(cc);
      if (index === undefined)
        await this.deps.waiters.sleep(this.deps.heartbeatMs, deadline, signal);
      else await this.deps.waiters.untilApplied(replica.raft.log.applied, index, deadline, signal);
    }
  }
}
