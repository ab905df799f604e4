// A single-member KvBackend with no Raft and no disk: commands apply at once to an EtcdMachine.
// For the API layer's tests and examples; the real member is src/replica/member/member.ts.
import type { Command } from '../../core/state/command.js';
import { encodeCommand } from '../../core/state/command.js';
import type { EtcdResult } from '../../core/state/etcd-machine.js';
import { EtcdMachine } from '../../core/state/etcd-machine.js';
import {
  ERR_BAD_LEADER_TRANSFEREE,
  ERR_CANCELED,
  ERR_MEMBER_NOT_FOUND,
  ERR_MEMBER_NOT_LEARNER,
  ERR_PEER_URL_EXIST,
  ERR_TIMEOUT_LEADER_TRANSFER,
} from '../../core/state/etcd-errors.js';
import type {
  LeaseId,
  LeaseKeepAliveResponse,
  LeaseTimeToLiveResponse,
} from '../../core/state/kv-types.js';
import type { LogIndex } from '../../core/base/units.js';
import type {
  BackupSnapshot,
  KvBackend,
  MemberInfo,
  NodeStatus,
} from '../../replica/member/backend.js';
import { computeHashKv, type HashKvAnswer } from '../../replica/member/hash-kv.js';
import { encodeServerSnapshot } from '../../replica/member/server-machine.js';
import { ApiError } from './status.js';
import type { Clock } from '../../replica/io.js';
import { monotonicClock } from '../clock.js';

export interface MemoryBackendOptions {
  /** Monotonic milliseconds; tests pass a fake. */
  readonly nowMs?: () => number;
  readonly clientUrls?: readonly string[];
}

export class MemoryBackend implements KvBackend {
  readonly clusterId = 0x1000n;
  readonly memberId = 0x1n;
  readonly machine = new EtcdMachine();
  /** Real timers; `nowMs` may be a test's fake. */
  readonly clock: Clock;
  private index = 0;
  private readonly nowMs: () => number;
  private readonly clientUrls: readonly string[];
  /** Members added with memberAdd (voters or learners); none of them runs. */
  private learners: MemberInfo[] = [];
  private selfPeerUrls: readonly string[] = ['http://127.0.0.1:2380'];

  constructor(opts: MemoryBackendOptions = {}) {
    this.nowMs = opts.nowMs ?? (() => performance.now());
    this.clock = { ...monotonicClock, nowMs: this.nowMs };
    this.clientUrls = opts.clientUrls ?? [];
  }

  raftTerm(): number {
    return 1;
  }

  hasLeader(): boolean {
    return true;
  }

  propose(cmd: Command, signal?: AbortSignal): Promise<EtcdResult> {
    if (signal?.aborted) return Promise.reject(new ApiError(ERR_CANCELED));
    const stamped: Command =
      cmd.type === 'leaseGrant' || cmd.type === 'leaseKeepAlive' || cmd.type === 'leaseRefreshAll'
        ? { ...cmd, nowMs: this.nowMs() }
        : cmd;
    this.index += 1;
    return Promise.resolve(this.machine.apply(this.index as LogIndex, encodeCommand(stamped)));
  }

  readBarrier(signal?: AbortSignal): Promise<void> {
    return signal?.aborted ? Promise.reject(new ApiError(ERR_CANCELED)) : Promise.resolve();
  }

  /** Everything is committed as soon as it is proposed. */
  knownCommittedRevision(signal?: AbortSignal): Promise<number> {
    return signal?.aborted
      ? Promise.reject(new ApiError(ERR_CANCELED))
      : Promise.resolve(this.machine.revision);
  }

  leaseTimeToLive(id: LeaseId, keys: boolean): Promise<LeaseTimeToLiveResponse> {
    return Promise.resolve(this.machine.leaseTimeToLive(id, this.nowMs(), keys));
  }

  async leaseKeepAlive(id: LeaseId, signal?: AbortSignal): Promise<LeaseKeepAliveResponse> {
    const r = await this.propose({ type: 'leaseKeepAlive', id, nowMs: 0 }, signal);
    if (r.type !== 'leaseKeepAlive') throw new Error(`unexpected result ${r.type}`);
    return r.response;
  }

  /** Revoke the leases the clock says have expired, as the leader's expiry loop does. */
  async expireLeases(): Promise<void> {
    for (const id of this.machine.expiredLeases(this.nowMs(), 1000))
      await this.propose({ type: 'leaseRevoke', id });
  }

  status(): NodeStatus {
    return {
      leader: this.memberId,
      raftIndex: this.index,
      raftTerm: 1,
      raftAppliedIndex: this.index,
      dbSizeBytes: 0,
      dbSizeQuotaBytes: 2 * 1024 ** 3,
      isLearner: false,
      version: '3.4.0',
    };
  }

  members(): readonly MemberInfo[] {
    const self: MemberInfo = {
      id: this.memberId,
      name: 'default',
      peerUrls: this.selfPeerUrls,
      clientUrls: this.clientUrls,
      isLearner: false,
    };
    return [self, ...this.learners];
  }

  memberAdd(peerUrls: readonly string[], isLearner: boolean): Promise<MemberInfo> {
    const m: MemberInfo = {
      id: BigInt(2 + this.learners.length),
      name: '',
      peerUrls,
      clientUrls: [],
      isLearner,
    };
    this.learners.push(m);
    return Promise.resolve(m);
  }

  memberRemove(id: bigint): Promise<void> {
    const i = this.learners.findIndex((m) => m.id === id);
    if (i < 0) return Promise.reject(new ApiError(ERR_MEMBER_NOT_FOUND));
    this.learners.splice(i, 1);
    return Promise.resolve();
  }

  memberUpdate(id: bigint, peerUrls: readonly string[]): Promise<void> {
    const all = this.members();
    if (!all.some((m) => m.id === id)) return Promise.reject(new ApiError(ERR_MEMBER_NOT_FOUND));
    const taken = all.some((m) => m.id !== id && m.peerUrls.some((u) => peerUrls.includes(u)));
    if (taken) return Promise.reject(new ApiError(ERR_PEER_URL_EXIST));
    if (id === this.memberId) this.selfPeerUrls = [...peerUrls];
    else this.learners = this.learners.map((m) => (m.id === id ? { ...m, peerUrls } : m));
    return Promise.resolve();
  }

  /** The added members never run, so they count as in sync: only the membership rules apply. */
  memberPromote(id: bigint): Promise<void> {
    const m = this.members().find((x) => x.id === id);
    if (m === undefined) return Promise.reject(new ApiError(ERR_MEMBER_NOT_FOUND));
    if (!m.isLearner) return Promise.reject(new ApiError(ERR_MEMBER_NOT_LEARNER));
    this.learners = this.learners.map((x) => (x.id === id ? { ...x, isLearner: false } : x));
    return Promise.resolve();
  }

  /** Only to itself: the added members never run, so a transfer to one never ends. */
  moveLeader(target: bigint): Promise<void> {
    if (target === this.memberId) return Promise.resolve();
    const m = this.members().find((x) => x.id === target);
    if (m === undefined || m.isLearner)
      return Promise.reject(new ApiError(ERR_BAD_LEADER_TRANSFEREE));
    return Promise.reject(new ApiError(ERR_TIMEOUT_LEADER_TRANSFER));
  }

  onLeaderChange(): () => void {
    return () => {};
  }

  hashKv(revision: number, signal?: AbortSignal): Promise<HashKvAnswer> {
    return computeHashKv(this.machine, revision, this.clock, signal);
  }

  /** The key space with an empty member table, in a server snapshot's layout. */
  backupSnapshot(): BackupSnapshot {
    return {
      data: encodeServerSnapshot([], this.machine.snapshot()),
      revision: this.machine.revision,
      appliedIndex: this.machine.appliedIndex,
    };
  }
}
