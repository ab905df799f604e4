// Running a request where the leader is: here when this member leads, else on the leader over the
// peer channel (forwarder.ts), retrying while leadership moves, within the request's deadline. The
// outcome of every attempt is typed (forward-frame.ts: done, refused, unknown), so the answer to
// the client says what is known: a request that may have been done is never reported as a plain
// refusal, and one that is not safe to repeat is never repeated once it may have been done.
import { NONE } from '../../core/base/units.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import {
  ERR_CANCELED,
  ERR_NO_LEADER,
  ERR_NOT_LEADER,
  ERR_STOPPED,
  ERR_TIMEOUT,
} from '../../core/state/etcd-errors.js';
import type { Clock } from '../io.js';
import type { Replica } from '../replica.js';
import type { ForwardAnswer, ForwardOp } from './forward-frame.js';
import type { Forwarder } from './forwarder.js';
import { etcdErrorOf, RequestError } from './request-error.js';
import type { ServerResult } from './server-machine.js';
import type { Waiters } from './waiters.js';

export interface LeaderRoutingDeps {
  readonly replica: () => Replica<ServerResult>;
  readonly forwarder: Forwarder;
  readonly waiters: Waiters;
  readonly clock: Clock;
  readonly requestTimeoutMs: number;
  readonly heartbeatMs: number;
  readonly isStopped: () => boolean;
  /** Serve `op` on this member, which leads; `deadlineMs` is on our clock. */
  readonly serveLocal: (op: ForwardOp, deadlineMs: number) => Promise<ForwardAnswer>;
}

/** Whether an operation may be sent again after an attempt whose outcome is unknown. */
export type Repeat = 'safe' | 'never';

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
    const fail = (definite: EtcdError): RequestError => new RequestError(maybeDone ?? definite);
    for (;;) {
      if (d.isStopped()) throw fail(ERR_STOPPED);
      if (signal?.aborted) throw fail(ERR_CANCELED);
      const raft = d.replica().raft;
      let a: ForwardAnswer;
      try {
        if (raft.role === 'leader') {
          a = await d.waiters.withDeadline(d.serveLocal(op, deadlineMs), deadlineMs, signal);
        } else if (raft.leader === NONE) {
          await d.waiters.untilLeaderChange(deadlineMs, signal, ERR_NO_LEADER);
          continue;
        } else {
          a = await d.forwarder.request(
            raft.leader,
            op,
            // The leader runs on its own clock: it is told how long we wait (see forwarder.ts).
            Infinity,
            Math.max(1, deadlineMs - d.clock.nowMs()),
            signal,
          );
          if (a.kind === 'done' && (op.op === 'propose' || op.op === 'member'))
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
        if (repeat === 'never') throw fail(a.error);
      } else if (a.error.message !== ERR_NOT_LEADER.message) {
        throw fail(a.error);
      }
      if (d.isStopped()) throw fail(ERR_STOPPED);
      try {
        await d.waiters.sleep(d.heartbeatMs, deadlineMs, signal);
      } catch (e) {
        throw fail(etcdErrorOf(e) ?? ERR_TIMEOUT);
      }
    }
  }
}
