// Request forwarding between members over the peer channel. A follower does not decide: it sends
// writes, lease renewals and lease TTL queries to the leader (as etcd's followers do), and the
// leader stamps lease commands with its own monotonic clock, the only clock lease deadlines are
// measured on. Frames are best effort, so every request has a local deadline; whatever the asker
// cannot know (no answer, the leader changed) it reports as `unknown`, never as a refusal.
import type { Prng } from '../../core/base/prng.js';
import type { NodeId } from '../../core/base/units.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import { ERR_CANCELED, ERR_TIMEOUT, ERR_TOO_MANY_REQUESTS } from '../../core/state/etcd-errors.js';
import type { Cancel, Clock, PeerChannel } from '../io.js';
import {
  decodeFrame,
  encodeFrame,
  FrameDecodeError,
  type ForwardAnswer,
  type ForwardOp,
} from './forward-frame.js';
import { etcdErrorOf } from './request-error.js';

/** Forwarded requests waiting at most; beyond it a request is refused as too many requests. */
export const FORWARD_PENDING_MAX = 10_000;
/** Request IDs start anywhere below this (2^47: exact in a float64 with room to count up). */
const REQUEST_ID_BASE_MAX = 2 ** 47;

/** An internal error while serving a forwarded request, for the asker (etcd's generic text). */
const FORWARD_INTERNAL: EtcdError = { code: 'Unknown', message: 'tenure: internal error' };

interface Pending {
  readonly to: NodeId;
  readonly finish: (a: ForwardAnswer) => void;
}

export class Forwarder {
  /**
   * Request IDs start at a random point per run: an answer queued for this member's previous run
   * (peer queues survive reconnects) must not resolve a request of this one.
   */
  private nextId: number;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly channel: PeerChannel,
    private readonly clock: Clock,
    prng: Prng,
    /** Serve a forwarded request on this member (the leader); `deadlineMs` is on our clock. */
    private readonly serve: (op: ForwardOp, deadlineMs: number) => Promise<ForwardAnswer>,
    /** A bug while serving a forwarded request: logged here, answered as an internal error. */
    private readonly onInternalError: (e: unknown) => void,
  ) {
    this.nextId = 1 + prng.int(0, REQUEST_ID_BASE_MAX);
  }

  /**
   * Ask `to`, which must not start `body` once its clock reads `deadlineMs` or later. Resolves
   * with its answer, or `unknown` when none arrives within `timeoutMs` of ours or the caller
   * aborts after sending; never rejects.
   */
  request(
    to: NodeId,
    body: ForwardOp,
    deadlineMs: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<ForwardAnswer> {
    if (signal?.aborted) return Promise.resolve({ kind: 'refused', error: ERR_CANCELED });
    if (this.pending.size >= FORWARD_PENDING_MAX)
      return Promise.resolve({ kind: 'refused', error: ERR_TOO_MANY_REQUESTS });
    const id = this.nextId++;
    return new Promise((resolve) => {
      let cancelTimer: Cancel = () => {};
      const onAbort = (): void => finish({ kind: 'unknown', error: ERR_CANCELED });
      const finish = (a: ForwardAnswer): void => {
        if (!this.pending.delete(id)) return;
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
        resolve(a);
      };
      cancelTimer = this.clock.after(timeoutMs, () =>
        finish({ kind: 'unknown', error: ERR_TIMEOUT }),
      );
      this.pending.set(id, { to, finish });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.channel.send(to, encodeFrame({ kind: 'request', id, deadlineMs, body }));
    });
  }

  /** A frame from a peer. Malformed frames are dropped: the asker's deadline covers them. */
  receive(from: NodeId, bytes: Uint8Array): void {
    let f;
    try {
      f = decodeFrame(bytes);
    } catch (e) {
      if (e instanceof FrameDecodeError) return;
      throw e;
    }
    if (f.kind === 'answer') {
      const p = this.pending.get(f.id);
      // Only the member we asked may answer.
      if (p?.to === from) p.finish(f.answer);
      return;
    }
    const id = f.id;
    const reply = (answer: ForwardAnswer): void =>
      this.channel.send(from, encodeFrame({ kind: 'answer', id, answer }));
    this.serve(f.body, f.deadlineMs).then(reply, (e: unknown) => {
      const known = etcdErrorOf(e);
      if (known === null) this.onInternalError(e);
      // A failure thrown while serving says nothing of what was done: the asker must not guess.
      reply({ kind: 'unknown', error: known ?? FORWARD_INTERNAL });
    });
  }

  /**
   * `to` is no longer the leader: answer what we asked it now with `error` as an unknown outcome
   * (it may have started them) instead of at the deadline (a dead leader never answers).
   */
  failTo(to: NodeId, error: EtcdError): void {
    for (const p of [...this.pending.values()])
      if (p.to === to) p.finish({ kind: 'unknown', error });
  }

  /** Answer every outstanding request with `error` as an unknown outcome (we are stopping). */
  close(error: EtcdError): void {
    for (const p of [...this.pending.values()]) p.finish({ kind: 'unknown', error });
  }
}
