// Member changes on the leader (etcd's MemberAdd and MemberRemove), and each member's publication
// of its own name and client URLs. Single-server changes (Raft thesis §4.1): the member record goes
// into the log first, then the configuration change; a new member learns the configuration from a
// snapshot, never by replaying a log whose first configuration is the implicit bootstrap one.
import type { NodeId } from '../../core/base/units.js';
import {
  ERR_MEMBER_NOT_FOUND,
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
  /** Put a member command in the log through the leader; resolves once applied here. */
  readonly proposeMember: (cmd: MemberCommand, signal?: AbortSignal) => Promise<unknown>;
  readonly checkLive: (signal: AbortSignal | undefined) => void;
}

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
    if (mine && JSON.stringify(mine) === JSON.stringify(want)) return;
    this.deps.proposeMember({ type: 'memberSet', member: want }).catch((e: unknown) => {
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
