// Running a request where the leader is: here when this member leads, else on the leader over the
// peer channel (forwarder.ts), retrying while leadership moves, within the request's deadline. The
// outcome of every attempt is typed (forward-frame.ts: done, refused, unknown), so the answer to
// the client says what is known: a request that may have been done is never reported as a plain
// refusal, and one that is not safe to repeat is never repeated once it may have been done.
import { elapsedElsewhereMinMs } from '../../core/base/clock-drift.js';
import type { Mutants } from '../../core/base/mutants.js';
import { NONE } from '../../core/base/units.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import {
  ERR_CANCELED,
  ERR_LEADER_CHANGED,
  ERR_NO_LEADER,
  ERR_NOT_LEADER,
  ERR_STOPPED,
  ERR_TIMEOUT,
  ERR_TIMEOUT_LEADER_FAIL,
} from '../../core/state/etcd-errors.js';
import type { Clock, PeerChannel } from '../io.js';
import type { Replica } from '../replica.js';
import type { ForwardAnswer, ForwardOp } from './forward-frame.js';
import type { Forwarder } from './forwarder.js';
import { etcdErrorOf, RequestError } from './request-error.js';
import type { ServerResult } from './server-machine.js';
import type { Waiters } from './waiters.js';

export interface LeaderRoutingDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly forwarder: Forwarder;
  /** What the leader's clock said last: the forwarded request's deadline is put on it. */
  readonly peers: PeerChannel;
  readonly waiters: Waiters;
  readonly clock: Clock;
  readonly requestTimeoutMs: number;
  readonly heartbeatMs: number;
  readonly isStopped: () => boolean;
  readonly mutants: Mutants;
  /** Serve `op` on this member, which leads; `deadlineMs` is on our clock. */
  readonly serveLocal: (op: ForwardOp, deadlineMs: number) => Promise<ForwardAnswer>;
}

/** Whether an operation may be sent again after an attempt whose outcome is unknown. */
export type Repeat = 'safe' | 'never';

/**
 * The messages a member answers a request with only when it did nothing and will do nothing:
 * clients may read them as definite refusals (see unknownOutcome for every other failure).
 */
export const REFUSAL_MESSAGES: ReadonlySet<string> = new Set([
  'etcdserver: no leader',
  'etcdserver: not leader',
  'etcdserver: leader changed',
  'etcdserver: too many requests',
  'etcdserver: request is too large',
]);

/**
 * The error for a request that may or may not have been done. It must not read as a refusal:
 * etcd answers such writes with a `request timed out` variant (etcdserver/errors.go), which Go's
 * clientv3 does not retry for a write and tenure's SDK reports as UnknownOutcomeError.
 */
export function unknownOutcome(e: EtcdError): EtcdError {
  return REFUSAL_MESSAGES.has(e.message) ? ERR_TIMEOUT_LEADER_FAIL : e;
}

/**
 * The reading of the leader's clock past which a request we forward now must not start: our
 * deadline put on the leader's clock by the last reading it sent us, with the least time its
 * clock can have advanced while ours advances to the deadline. Undefined when it never said.
 */
export function deadlineOnPeer(
  peers: PeerChannel,
  leader: Parameters<PeerChannel['heard']>[0],
  deadlineMs: number,
): number | undefined {
  const h = peers.heard(leader);
  if (h === undefined) return undefined;
  return h.peerMs + elapsedElsewhereMinMs(deadlineMs - h.localMs);
}

export class LeaderRouting {
  constructor(private readonly deps: LeaderRoutingDeps) {}

  /**
   * Run `op` on the leader and return its value. A write (`repeat: 'never'`) resolves only once
   * it is applied here too, so a read here after it sees it. Rejects with a RequestError.
   */
  async run(op: ForwardOp, signal: AbortSignal | undefined, repeat: Repeat): Promise<unknown> {
    const d = this.deps;
    const deadlineMs = d.clock.nowMs() + d.requestTimeoutMs;
    /** An attempt may have been done: the final failure must say so, not refuse. */
    let maybeDone: EtcdError | undefined;
    const fail = (definite: EtcdError): RequestError => {
      if (maybeDone === undefined) return new RequestError(definite);
      // The planted bug (the code before the fix): say "leader changed" for a write that may be done.
      if (d.mutants.has('unknownAsRefusal')) return new RequestError(maybeDone);
      return new RequestError(unknownOutcome(maybeDone));
    };
    /** We led when the last attempt started, and it was refused because we no longer do. */
    let steppedDown = false;
    for (;;) {
      if (d.isStopped()) throw fail(ERR_STOPPED);
      if (signal?.aborted) throw fail(ERR_CANCELED);
      const raft = d.replica().raft;
      if (raft.role !== 'leader' && raft.leaderSuspected) {
        // Evidence that the leader's process is gone (issue 19): a request forwarded there now
        // would be lost and, unanswered, reported as an unknown outcome. Wait for the election
        // the evidence starts (or the leader to speak again) and send it where it can be done.
        const untilMs = Math.min(deadlineMs, d.clock.nowMs() + d.heartbeatMs);
        try {
          await d.waiters.untilLeaderChange(untilMs, signal, ERR_NO_LEADER);
        } catch (e) {
          if (untilMs >= deadlineMs || signal?.aborted) throw fail(etcdErrorOf(e) ?? ERR_TIMEOUT);
        }
        continue;
      }
      const local = raft.role === 'leader';
      // A deposed leader lets go at once (issue 19): with no successor known here (it stepped
      // down by CheckQuorum, cut off), the client is better served by another member now than
      // by this one at the deadline. Nothing was done by this attempt: `fail` says so.
      if (!local && raft.leader === NONE && steppedDown) throw fail(ERR_LEADER_CHANGED);
      let a: ForwardAnswer;
      try {
        if (local) {
          a = await d.waiters.withDeadline(d.serveLocal(op, deadlineMs), deadlineMs, signal);
        } else if (raft.leader === NONE) {
          await d.waiters.untilLeaderChange(deadlineMs, signal, ERR_NO_LEADER);
          continue;
        } else {
          const onLeader = deadlineOnPeer(d.peers, raft.leader, deadlineMs);
          if (onLeader === undefined) {
            // A leader we have no clock reading from yet: its first message brings one.
            await d.waiters.sleep(d.heartbeatMs, deadlineMs, signal);
            continue;
          }
          a = await d.forwarder.request(
            raft.leader,
            op,
            onLeader,
            Math.max(1, deadlineMs - d.clock.nowMs()),
            signal,
          );
          if (a.kind === 'done' && changesState(op))
            await d.waiters.untilApplied(d.replica().raft.log.applied, a.index, deadlineMs, signal);
        }
      } catch (e) {
        const known = etcdErrorOf(e);
        if (known === null) throw e;
        // A local wait ran out or was aborted while a proposal of ours may be in the log.
        if (raft.role === 'leader' || raft.leader !== NONE) maybeDone ??= known;
        throw fail(known);
      }
      if (a.kind === 'done') return a.value;
      if (a.kind === 'unknown') {
        maybeDone = a.error;
        // The planted bug: repeat it anyway, as a client without duplicate detection would.
        if (repeat === 'never' && !d.mutants.has('repeatUnknownWrite')) throw fail(a.error);
      } else if (a.error.message !== ERR_NOT_LEADER.message) {
        throw fail(a.error);
      } else if (local && d.replica().raft.role !== 'leader') {
        // Refused because we stepped down (not because a transfer we lead is under way: then we
        // still lead, and ask again after the pause below).
        steppedDown = true;
        // Its successor, if this member knows it already, takes the request without a pause.
        if (d.replica().raft.leader !== NONE) continue;
      }
      if (d.isStopped()) throw fail(ERR_STOPPED);
      try {
        // Refused as "not leader" (a transfer under way here or there, or a leader not yet
        // caught up): ask again at the next leader change, which a transfer brings within a
        // round trip, or after a heartbeat. A fixed heartbeat's pause stalled every write of a
        // SIGTERM hand-off for 100 ms (issue 19, rolling restart).
        await d.waiters.sleepOrLeaderChange(d.heartbeatMs, deadlineMs, signal);
      } catch (e) {
        throw fail(etcdErrorOf(e) ?? ERR_TIMEOUT);
      }
    }
  }
}

/**
 * Operations that change the replicated state: a follower answers them once it has applied what
 * the leader did, so that what it shows next (a read, MemberList) includes it.
 */
function changesState(op: ForwardOp): boolean {
  return op.op !== 'timeToLive' && op.op !== 'keepAlive';
}
