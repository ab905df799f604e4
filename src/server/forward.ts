// Request forwarding between members over the peer transport. A follower does not decide: it
// sends writes, lease renewals and lease TTL queries to the leader (as etcd's followers do), and
// the leader stamps lease commands with its own monotonic clock, which is the only clock lease
// deadlines are measured on. Frames are best effort, so every request has a deadline.
import type { NodeId } from '../core/base/units.js';
import type { Command } from '../core/state/command.js';
import { randomInt } from 'node:crypto';
import { ERR_CANCELED, ERR_TIMEOUT, ERR_TOO_MANY_REQUESTS } from '../core/state/etcd-errors.js';
import type { LeaseId } from '../core/state/kv-types.js';
import type { MemberCommand } from './server-machine.js';
import { INTERNAL_ERROR, statusOf, type ApiStatus } from './api/status.js';
import { decodeTagged, encodeTagged } from '../core/state/tagged-json.js';

export type ForwardOp =
  | { readonly op: 'propose'; readonly cmd: Command }
  | { readonly op: 'member'; readonly cmd: MemberCommand }
  | { readonly op: 'timeToLive'; readonly id: LeaseId; readonly keys: boolean }
  | { readonly op: 'keepAlive'; readonly id: LeaseId }
  | {
      readonly op: 'memberAdd';
      readonly peerUrls: readonly string[];
      readonly isLearner: boolean;
    }
  | { readonly op: 'memberRemove'; readonly id: bigint };

/** A leader's answer: a value, plus the log index a follower should have applied before replying. */
export type ForwardAnswer =
  | { readonly ok: true; readonly value: unknown; readonly index: number }
  | { readonly ok: false; readonly error: ApiStatus };

type Frame =
  | { readonly k: 'q'; readonly id: number; readonly body: ForwardOp }
  | ({ readonly k: 'r'; readonly id: number } & ForwardAnswer);

/** Forwarded requests waiting at most; beyond it a request fails as too many requests. */
export const FORWARD_PENDING_MAX = 10_000;

interface Pending {
  readonly to: NodeId;
  readonly resolve: (a: ForwardAnswer) => void;
  readonly timer: NodeJS.Timeout;
  readonly onAbort: () => void;
  readonly signal: AbortSignal | undefined;
}

export class Forwarder {
  /**
   * Request IDs start at a random point per run: an answer queued for this node's previous run
   * (peer queues survive reconnects) must not resolve a request of this one.
   */
  private nextId = randomInt(1, 2 ** 47);
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly send: (to: NodeId, payload: Uint8Array) => void,
    /** Run a forwarded request on this node (the leader). */
    private readonly serve: (op: ForwardOp) => Promise<ForwardAnswer>,
    /** A bug while serving a forwarded request: logged here, sent as an internal error. */
    private readonly onInternalError: (e: unknown) => void = () => {},
  ) {}

  /** Ask `to`; resolves with its answer, or ERR_TIMEOUT / ERR_CANCELED. Never rejects. */
  request(
    to: NodeId,
    body: ForwardOp,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<ForwardAnswer> {
    if (signal?.aborted) return Promise.resolve({ ok: false, error: ERR_CANCELED });
    if (this.pending.size >= FORWARD_PENDING_MAX)
      return Promise.resolve({ ok: false, error: ERR_TOO_MANY_REQUESTS });
    const id = this.nextId++;
    return new Promise((resolve) => {
      const finish = (a: ForwardAnswer): void => {
        const p = this.pending.get(id);
        if (!p) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        p.signal?.removeEventListener('abort', p.onAbort);
        resolve(a);
      };
      const onAbort = (): void => finish({ ok: false, error: ERR_CANCELED });
      const timer = setTimeout(() => finish({ ok: false, error: ERR_TIMEOUT }), timeoutMs);
      this.pending.set(id, { to, resolve: finish, timer, onAbort, signal });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.send(to, encodeTagged({ k: 'q', id, body } satisfies Frame));
    });
  }

  /** A frame from a peer. Malformed frames are dropped: the sender's deadline covers them. */
  receive(from: NodeId, payload: Uint8Array): void {
    let f: Frame;
    try {
      f = decodeTagged(payload) as Frame;
    } catch {
      return;
    }
    if (f.k === 'r') {
      const p = this.pending.get(f.id);
      // Only the member we asked may answer.
      if (p?.to === from) p.resolve(f);
      return;
    }
    if (f.k !== 'q') return;
    this.serve(f.body).then(
      (a) => this.send(from, encodeTagged({ ...a, k: 'r', id: f.id } satisfies Frame)),
      (e: unknown) => {
        const known = statusOf(e);
        if (known === null) this.onInternalError(e);
        const error: ApiStatus = known ?? INTERNAL_ERROR;
        this.send(from, encodeTagged({ k: 'r', id: f.id, ok: false, error } satisfies Frame));
      },
    );
  }

  /**
   * `to` is no longer the leader: answer its outstanding requests now with `error` instead of
   * letting them run to their deadline (a dead leader never answers).
   */
  failTo(to: NodeId, error: ApiStatus): void {
    for (const p of [...this.pending.values()]) if (p.to === to) p.resolve({ ok: false, error });
  }

  /** Answer every outstanding request with `error` (the node is stopping). */
  close(error: ApiStatus = ERR_TIMEOUT): void {
    for (const p of [...this.pending.values()]) p.resolve({ ok: false, error });
  }
}
