// The simulator's clients reach a member the way gRPC clients do, minus the sockets: every request
// and response is encoded and decoded with tenure's own protos (so handlers see exactly the
// objects production decodes), each call goes through the member's CallTracker (size limit,
// `hasleader`, leader loss) and its handler table, and the way back is the call's final status.
// Messages take a seeded delay each way, in order per call, and reach a member only while it runs
// (a paused member holds them; a crashed one refuses new calls and resets the ones it had).
import type * as protoLoader from '@grpc/proto-loader';
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { Member } from '../replica/member/member.js';
import { DEFAULT_CLIENT_API_CONFIG, type ClientApiConfig } from '../server/api/api-config.js';
import { CallTracker } from '../server/api/call-scope.js';
import { GrpcStatus } from '../server/api/grpc-codes.js';
import { clientApiHandlers, type HandlerTable } from '../server/api/handler-table.js';
import type { Logger } from '../server/api/log.js';
import { packageDefinition } from '../server/api/protos.js';
import { grpcStatusOf } from '../server/api/status.js';
import { AsyncQueue } from '../core/base/async-queue.js';
import type { EventQueue } from '../core/base/event-queue.js';

/** How a call ended when it did not end with a response. */
export type CallFailure =
  /** The member was down: the request never left the client (safe to send elsewhere). */
  | { readonly kind: 'refused' }
  /** The connection broke after the request was sent (the member crashed). */
  | { readonly kind: 'reset' }
  /** The client gave up waiting (its own deadline). */
  | { readonly kind: 'timeout' }
  /** The member answered with a gRPC status. */
  | { readonly kind: 'status'; readonly code: number; readonly details: string };

export type UnaryAnswer =
  | { readonly ok: true; readonly response: Record<string, unknown> }
  | { readonly ok: false; readonly failure: CallFailure };

/** The client's end of a bidirectional stream. */
export interface ClientStream {
  send(request: object): void;
  /** Half-close: no more requests (the member's handler sees its requests end). */
  close(): void;
  /** Abandon the call (a client that gives up on a stream cancels it). */
  cancel(): void;
}

export interface StreamSink {
  onResponse(response: Record<string, unknown>): void;
  /** The stream ended: OK, a status, a reset or a refusal. Called once; nothing follows. */
  onEnd(failure: CallFailure | undefined): void;
}

type Method = protoLoader.MethodDefinition<object, object>;

let methodsCache: Map<string, Method> | undefined;
function methods(): Map<string, Method> {
  if (methodsCache) return methodsCache;
  const out = new Map<string, Method>();
  for (const def of Object.values(packageDefinition())) {
    if ('format' in def) continue;
    for (const m of Object.values<Method>(def)) out.set(m.path, m);
  }
  methodsCache = out;
  return out;
}

function method(path: string): Method {
  const m = methods().get(path);
  if (!m) throw new Error(`sim: no method ${path}`);
  return m;
}

function noop(): void {}

const NO_METADATA: ReadonlyMap<string, string> = new Map();

/** One member's end: its handler table and call tracker, for one life of the member. */
export class MemberApi {
  readonly handlers: HandlerTable;
  readonly tracker: CallTracker;
  /** Calls in progress: a crash resets each of them. */
  private readonly live = new Set<() => void>();

  constructor(
    member: Member,
    /** A handler bug is logged here (the simulator fails the run on one). */
    log: Logger,
    config: ClientApiConfig = DEFAULT_CLIENT_API_CONFIG,
  ) {
    this.handlers = clientApiHandlers(member, config);
    this.tracker = new CallTracker({ backend: member, log, config });
  }

  /** The member crashed: every call it had breaks. */
  crash(): void {
    const calls = [...this.live];
    this.live.clear();
    for (const reset of calls) reset();
  }

  /** Serve one unary call; `reply` gets the encoded-and-decoded response or the status. */
  unary(
    path: string,
    request: unknown,
    metadata: ReadonlyMap<string, string>,
    reply: (a: UnaryAnswer) => void,
  ): { cancel(): void } {
    const m = method(path);
    const handler = this.handlers.unary.get(path);
    let done = false;
    const finish = (a: UnaryAnswer): void => {
      if (done) return;
      done = true;
      this.live.delete(reset);
      reply(a);
    };
    const reset = (): void => finish({ ok: false, failure: { kind: 'reset' } });
    if (!handler) {
      finish(statusAnswer(GrpcStatus.UNIMPLEMENTED, `tenure: ${path} is not implemented`));
      return { cancel: () => {} };
    }
    let scope;
    try {
      scope = this.tracker.begin({ method: path, metadata, stream: false });
    } catch (e) {
      finish(failureAnswer(this.tracker, path, e));
      return { cancel: () => {} };
    }
    this.live.add(reset);
    const s = scope;
    Promise.resolve()
      .then(() => handler(request, s.info))
      .then(
        (resp) => finish({ ok: true, response: roundTrip(m, resp) }),
        (e: unknown) => finish(failureAnswer(this.tracker, path, e)),
      )
      .finally(() => s.end());
    return { cancel: () => s.cancel() };
  }

  /** Serve one bidirectional stream. */
  bidi(
    path: string,
    metadata: ReadonlyMap<string, string>,
    sink: StreamSink,
  ): { push(req: unknown): void; halfClose(): void; cancel(): void } {
    const m = method(path);
    const handler = this.handlers.bidi.get(path);
    let ended = false;
    const end = (f: CallFailure | undefined): void => {
      if (ended) return;
      ended = true;
      this.live.delete(reset);
      sink.onEnd(f);
    };
    const reset = (): void => end({ kind: 'reset' });
    const noop = { push: () => {}, halfClose: () => {}, cancel: () => {} };
    if (!handler) {
      end({ kind: 'status', code: GrpcStatus.UNIMPLEMENTED, details: `${path} not implemented` });
      return noop;
    }
    let scope;
    try {
      scope = this.tracker.begin({ method: path, metadata, stream: true });
    } catch (e) {
      const a = failureAnswer(this.tracker, path, e);
      end(a.ok ? undefined : a.failure);
      return noop;
    }
    const s = scope;
    this.live.add(reset);
    // The member's handler reads requests from it, as the gRPC server's request iterator.
    const requests = new AsyncQueue<unknown>();
    s.info.signal.addEventListener('abort', () => requests.end(), { once: true });
    Promise.resolve()
      .then(() =>
        handler({
          info: s.info,
          requests,
          send: (resp) => {
            if (!ended && !s.info.signal.aborted) sink.onResponse(roundTrip(m, resp));
            return Promise.resolve();
          },
        }),
      )
      .then(
        () => {
          const st = s.abortStatus();
          end(st === null ? undefined : statusFailure(grpcStatusOf(st)));
        },
        (e: unknown) => {
          const st = s.abortStatus();
          const a =
            st !== null
              ? { ok: false as const, failure: statusFailure(grpcStatusOf(st)) }
              : failureAnswer(this.tracker, path, e);
          end(a.ok ? undefined : a.failure);
        },
      )
      .finally(() => s.end());
    return {
      push: (req) => requests.push(m.requestDeserialize(m.requestSerialize(req as object))),
      halfClose: () => requests.end(),
      cancel: () => s.cancel(),
    };
  }
}

function roundTrip(m: Method, resp: object): Record<string, unknown> {
  return m.responseDeserialize(m.responseSerialize(resp)) as Record<string, unknown>;
}

function statusFailure(s: { code: number; details: string }): CallFailure {
  return { kind: 'status', code: s.code, details: s.details };
}

function statusAnswer(code: number, details: string): UnaryAnswer {
  return { ok: false, failure: { kind: 'status', code, details } };
}

function failureAnswer(tracker: CallTracker, path: string, e: unknown): UnaryAnswer {
  const st = grpcStatusOf(tracker.failure(path, e));
  return statusAnswer(st.code, st.details);
}

/** What the channel needs of the simulation: members, their run state, time and a delay. */
export interface ChannelHost {
  readonly q: EventQueue;
  readonly prng: Prng;
  /** Mean extra one-way delay, in ms (clients far from the members); 0 for none. */
  readonly extraDelayMeanMs: number;
  /** The member's API if it is up or paused (not crashed or removed), with its life number. */
  api(node: NodeId): { readonly api: MemberApi; readonly epoch: number } | undefined;
  /**
   * Run `fn` on the member now, or when it resumes; if it crashes first (or did since `epoch`),
   * run `lost` instead, at the crash.
   */
  onMember(node: NodeId, epoch: number, fn: () => void, lost: () => void): void;
  /** A unary request reached `node`'s handler (for the simulator's own bookkeeping). */
  onDeliver?(node: NodeId, path: string, request: unknown): void;
}

/** Event tags for the hash: client → member and back. */
const TAG_TO_MEMBER = 4;
const TAG_TO_CLIENT = 5;

/** The clients' side of the channel. */
export class ApiChannel {
  constructor(private readonly host: ChannelHost) {}

  private delay(): number {
    const far = this.host.extraDelayMeanMs;
    return 0.1 + this.host.prng.exp(0.5) + (far > 0 ? this.host.prng.exp(far) : 0);
  }

  /**
   * One unary call to `node`; resolves with the answer, a failure, or a client-side timeout. At
   * the timeout the client cancels the call, unless `leaveOpen`: a client whose own timer gave up
   * without ending the call, which the member then goes on serving.
   */
  unary(
    node: NodeId,
    path: string,
    request: object,
    timeoutMs: number,
    metadata: ReadonlyMap<string, string> = NO_METADATA,
    leaveOpen = false,
  ): Promise<UnaryAnswer> {
    const { q } = this.host;
    const m = method(path);
    const decoded = m.requestDeserialize(m.requestSerialize(request));
    return new Promise((resolve) => {
      let settled = false;
      let cancelOnMember: (() => void) | undefined;
      const settle = (a: UnaryAnswer): void => {
        if (settled) return;
        settled = true;
        resolve(a);
      };
      q.after(timeoutMs, TAG_TO_CLIENT, () => {
        if (settled) return;
        settle({ ok: false, failure: { kind: 'timeout' } });
        // A client that gives up cancels its call; the member hears of it later, if at all.
        if (!leaveOpen) q.after(this.delay(), TAG_TO_MEMBER, () => cancelOnMember?.());
      });
      q.after(this.delay(), TAG_TO_MEMBER, () => {
        const target = this.host.api(node);
        if (!target) {
          q.after(this.delay(), TAG_TO_CLIENT, () =>
            settle({ ok: false, failure: { kind: 'refused' } }),
          );
          return;
        }
        const reset = (): void =>
          q.after(this.delay(), TAG_TO_CLIENT, () =>
            settle({ ok: false, failure: { kind: 'reset' } }),
          );
        this.host.onMember(
          node,
          target.epoch,
          () => {
            this.host.onDeliver?.(node, path, decoded);
            const call = target.api.unary(path, decoded, metadata, (a) =>
              q.after(this.delay(), TAG_TO_CLIENT, () => settle(a)),
            );
            cancelOnMember = () =>
              this.host.onMember(node, target.epoch, () => call.cancel(), noop);
            if (settled && !leaveOpen) cancelOnMember();
          },
          reset,
        );
      });
    });
  }

  /** Open a bidirectional stream to `node`; requests and responses keep their order. */
  bidi(
    node: NodeId,
    path: string,
    sink: StreamSink,
    metadata: ReadonlyMap<string, string> = NO_METADATA,
  ): ClientStream {
    const { q } = this.host;
    // Each direction is one ordered pipe: a message never overtakes the one before it.
    let toMemberAt = q.now;
    let toClientAt = q.now;
    const later = (prev: number): number => Math.max(prev, q.now + this.delay());
    let ended = false;
    const endClient = (f: CallFailure | undefined): void => {
      toClientAt = later(toClientAt);
      q.at(toClientAt, TAG_TO_CLIENT, () => {
        if (ended) return;
        ended = true;
        sink.onEnd(f);
      });
    };
    let server: { push(req: unknown): void; halfClose(): void; cancel(): void } | undefined;
    let epoch = -1;
    const pending: ((s: NonNullable<typeof server>) => void)[] = [];
    const onServer = (fn: (s: NonNullable<typeof server>) => void): void => {
      toMemberAt = later(toMemberAt);
      q.at(toMemberAt, TAG_TO_MEMBER, () => {
        const s = server;
        // A crash in between resets the stream through the member's live calls or `lost` below.
        if (s) this.host.onMember(node, epoch, () => fn(s), noop);
        else pending.push(fn);
      });
    };
    toMemberAt = later(toMemberAt);
    q.at(toMemberAt, TAG_TO_MEMBER, () => {
      const target = this.host.api(node);
      if (!target) {
        endClient({ kind: 'refused' });
        return;
      }
      epoch = target.epoch;
      this.host.onMember(
        node,
        epoch,
        () => {
          const s = target.api.bidi(path, metadata, {
            onResponse: (resp) => {
              toClientAt = later(toClientAt);
              q.at(toClientAt, TAG_TO_CLIENT, () => {
                if (!ended) sink.onResponse(resp);
              });
            },
            onEnd: (f) => endClient(f),
          });
          server = s;
          for (const fn of pending.splice(0)) fn(s);
        },
        () => endClient({ kind: 'reset' }),
      );
    });
    return {
      send: (req) => {
        if (!ended) onServer((s) => s.push(req));
      },
      close: () => onServer((s) => s.halfClose()),
      cancel: () => {
        if (ended) return;
        ended = true;
        onServer((s) => s.cancel());
      },
    };
  }
}
