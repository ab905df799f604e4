// Moving leadership on purpose (etcd's MoveLeader and the hand-off of a leader that is asked to
// stop: server/etcdserver/server.go MoveLeader, TransferLeadership). The core's transferLeader
// (Raft thesis §3.10) brings the target's log up to date and tells it to campaign at once, so the
// cluster gets a new leader in about one round trip instead of an election timeout.
//
// While a transfer runs this member takes no client proposals (`holding`): they are refused as
// "not leader" before anything is proposed, and the request routing (leader-routing.ts) tries
// them again on whoever leads next. Before the core starts the transfer, this member waits for
// what it already proposed to be applied, so no client waits on an entry of a leadership that is
// about to end (such a proposal would be answered "leader changed", an unknown outcome).
import { NONE, type NodeId } from '../../core/base/units.js';
import {
  ERR_BAD_LEADER_TRANSFEREE,
  ERR_NOT_LEADER,
  ERR_TIMEOUT,
  ERR_TIMEOUT_LEADER_TRANSFER,
  type EtcdError,
} from '../../core/state/etcd-errors.js';
import type { Clock } from '../io.js';
import type { Replica } from '../replica.js';
import type { MemberLog } from './member-config.js';
import { hexId } from './member-id.js';
import { etcdErrorOf, RequestError } from './request-error.js';
import type { ServerResult } from './server-machine.js';
import type { Waiters } from './waiters.js';

export interface LeaderTransferDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly waiters: Waiters;
  readonly clock: Clock;
  /** One Raft tick: how often a running transfer is looked at (etcd polls every tick too). */
  readonly heartbeatMs: number;
  /** etcd's --election-timeout: a voter not heard from for this long is taken to be down. */
  readonly electionMs: number;
  /** When (our clock) we last heard from a peer, if ever (PeerChannel.heard). */
  readonly lastHeardMs: (id: NodeId) => number | undefined;
  readonly log: MemberLog;
}

/** How a transfer ended, for the caller's log and for tests. */
export interface TransferResult {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly tookMs: number;
}

/** The wait inside a transfer ran out: internal only, turned into etcd's error by `move`. */
const CHECK_AGAIN: EtcdError = { code: 'Unavailable', message: 'tenure: check the transfer' };

export class LeaderTransfer {
  /** Transfers in progress on this member (MoveLeader calls and a hand-off may overlap). */
  private running = 0;

  constructor(private readonly deps: LeaderTransferDeps) {}

  /** True while a transfer this member started runs: client proposals wait for the next leader. */
  get holding(): boolean {
    return this.running > 0;
  }

  /**
   * On the leader: make `to` the leader, and return once this member sees it lead. Rejects with
   * etcd's errors: `not leader`, `bad leader transferee` (a learner, or no member at all), and
   * `leader transfer took too long` once our clock reads `untilMs` first.
   */
  async move(to: NodeId, untilMs: number, signal?: AbortSignal): Promise<TransferResult> {
    const d = this.deps;
    const raft = d.replica().raft;
    if (raft.role !== 'leader') throw new RequestError(ERR_NOT_LEADER);
    // etcd: `!IsMemberExist(transferee) || Member(transferee).IsLearner`.
    if (!raft.conf().voters.includes(to)) throw new RequestError(ERR_BAD_LEADER_TRANSFEREE);
    const from = raft.id;
    const startMs = d.clock.nowMs();
    // etcd answers at once: the leader already is the transferee.
    if (to === from) return { from, to, tookMs: 0 };
    d.log.info(
      { currentLeaderMemberId: hexId(from), transfereeMemberId: hexId(to) },
      'leadership transfer starting',
    );
    let held = true;
    this.running++;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.running--;
    };
    try {
      await this.quiesce(untilMs, signal);
      const replica = d.replica();
      if (replica.raft.role !== 'leader') throw new RequestError(ERR_NOT_LEADER);
      if (!replica.transferLeader(to)) throw new RequestError(ERR_BAD_LEADER_TRANSFEREE);
      await this.untilLeads(to, untilMs, signal, release);
    } finally {
      release();
    }
    const result = { from, to, tookMs: d.clock.nowMs() - startMs };
    d.log.info(
      {
        oldLeaderMemberId: hexId(from),
        newLeaderMemberId: hexId(to),
        tookMs: Math.round(result.tookMs),
      },
      'leadership transfer finished',
    );
    return result;
  }

  /**
   * Before this member stops: if it leads, hand leadership to the voter whose log matches ours
   * furthest (the one the core can bring up to date soonest) among those heard from within an
   * election timeout, waiting until our clock reads `untilMs` at most. Undefined when there was
   * nothing to hand off or it did not happen in time; a failure is logged, never thrown, since
   * the member stops either way.
   */
  async handOff(untilMs: number): Promise<TransferResult | undefined> {
    const d = this.deps;
    const raft = d.replica().raft;
    if (raft.role !== 'leader') return undefined;
    const voters = raft.conf().voters;
    const nowMs = d.clock.nowMs();
    const alive = voters.filter((v) => {
      const heardMs = d.lastHeardMs(v);
      return heardMs !== undefined && nowMs - heardMs < d.electionMs;
    });
    const progress = raft.progressView();
    let to = mostCaughtUp(progress, alive, raft.id);
    if (to === NONE) to = mostCaughtUp(progress, voters, raft.id);
    if (to === NONE) {
      this.deps.log.info({}, 'skipped leadership transfer for single voting member cluster');
      return undefined;
    }
    try {
      return await this.move(to, untilMs);
    } catch (e) {
      const known = etcdErrorOf(e);
      if (known === null) throw e;
      this.deps.log.warn({ err: known.message }, 'leadership transfer failed');
      return undefined;
    }
  }

  /** Wait until everything proposed so far is applied here, within the transfer's bound. */
  private async quiesce(untilMs: number, signal: AbortSignal | undefined): Promise<void> {
    const d = this.deps;
    const raft = d.replica().raft;
    try {
      await d.waiters.untilApplied(raft.log.applied, raft.log.lastIndex(), untilMs, signal);
    } catch (e) {
      throw new RequestError(transferError(e), { cause: e });
    }
  }

  /**
   * Wait until this member sees `to` lead. A transfer the core gave up on (not done within an
   * election timeout, §3.10) is not started again: etcd waits out its deadline the same way.
   */
  private async untilLeads(
    to: NodeId,
    untilMs: number,
    signal: AbortSignal | undefined,
    release: () => void,
  ): Promise<void> {
    const d = this.deps;
    for (;;) {
      const raft = d.replica().raft;
      if (raft.leader === to) return;
      // Given up by the core: proposals are taken again while we wait out the deadline.
      if (raft.role === 'leader' && raft.transferee === NONE) release();
      const checkMs = Math.min(untilMs, d.clock.nowMs() + d.heartbeatMs);
      try {
        await d.waiters.untilLeaderChange(checkMs, signal, CHECK_AGAIN);
      } catch (e) {
        if (etcdErrorOf(e)?.message === CHECK_AGAIN.message && d.clock.nowMs() < untilMs) continue;
        throw new RequestError(transferError(e), { cause: e });
      }
    }
  }
}

/** Out of time (or told to stop) while transferring: etcd's `leader transfer took too long`. */
function transferError(e: unknown): EtcdError {
  const known = etcdErrorOf(e);
  if (known === null) throw e;
  return known.message === CHECK_AGAIN.message || known.message === ERR_TIMEOUT.message
    ? ERR_TIMEOUT_LEADER_TRANSFER
    : known;
}

/**
 * The voter other than `self` with the highest match index in the leader's progress, NONE if
 * there is none. Ties go to the lowest ID, so the choice is the same on every run.
 */
export function mostCaughtUp(
  progress: ReadonlyMap<NodeId, { readonly match: number }>,
  voters: readonly NodeId[],
  self: NodeId,
): NodeId {
  let best: NodeId = NONE;
  let bestMatch = -1;
  for (const v of [...voters].sort((a, b) => a - b)) {
    if (v === self) continue;
    const match = progress.get(v)?.match ?? 0;
    if (match > bestMatch) {
      best = v;
      bestMatch = match;
    }
  }
  return best;
}
