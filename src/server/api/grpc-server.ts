// The gRPC side of the client API, served on node:http2 directly (grpc/doc/PROTOCOL-HTTP2.md):
// each method of tenure's protos is bound to its handler through one path per call kind. The
// paths do what etcd's interceptors do (size limit, `hasleader`, leader loss) and turn every
// failure into a status: expected ones carry etcd's code and text, a handler bug becomes
// Internal and a log line. Methods without a handler, and services not in the protos (Auth),
// answer UNIMPLEMENTED.
//
// Why not grpc-js's Server: per unary call it cost more CPU than this file with the same codecs
// and handlers (94–95 against 75 µs per Put at 64 in flight, one in-memory server, the project's
// machine, where the gRPC front end is most of a Node server's cost per put).
// grpc-js remains the client library (src/client).
import * as http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import { GrpcStatus } from './grpc-codes.js';
import type * as protoLoader from '@grpc/proto-loader';
import type { ClientApiConfig } from './api-config.js';
import type { CallScope, CallTracker } from './call-scope.js';
import type { BidiHandler, ServerStreamHandler, UnaryHandler } from './convert.js';
import type { HandlerTable } from './handler-table.js';
import type { Logger } from './log.js';
import { packageDefinition } from './protos.js';
import { grpcStatusOf } from './status.js';
import {
  encodeGrpcMessage,
  frameMessage,
  GrpcWireError,
  MESSAGE_HEADER_BYTES,
  MessageReader,
  parseGrpcTimeout,
} from './grpc-wire.js';

export interface GrpcServerOptions {
  readonly handlers: HandlerTable;
  readonly tracker: CallTracker;
  readonly config: ClientApiConfig;
  readonly log: Logger;
}

export interface GrpcServer {
  /** Serve one client connection: a socket, or a stream standing in front of one. */
  handleConnection(connection: Duplex): void;
  /** Send GOAWAY on every connection: calls in progress may finish, new ones go elsewhere. */
  drain(): void;
  /** Resolves once every connection has closed. */
  closed(): Promise<void>;
  /** Cut every connection now. */
  destroy(): void;
}

/** A call's final gRPC status, as status.ts maps our errors. */
type Status = ReturnType<typeof grpcStatusOf>;

const OK: Status = { code: GrpcStatus.OK, details: '' };
/** Bytes a stream may queue in one turn before its writer is asked to wait. */
const QUEUED_BYTES_MAX = 256 * 1024;

const DEADLINE_EXCEEDED: Status = {
  code: GrpcStatus.DEADLINE_EXCEEDED,
  details: 'Deadline exceeded',
};

type Kind =
  | { readonly kind: 'unary'; readonly handler: UnaryHandler }
  | { readonly kind: 'serverStream'; readonly handler: ServerStreamHandler }
  | { readonly kind: 'bidi'; readonly handler: BidiHandler };

interface Method {
  readonly path: string;
  readonly decode: (bytes: Buffer) => unknown;
  readonly encode: (value: object) => Buffer;
  readonly call: Kind | undefined;
}

/** Every method of the protos by path, with its handler when tenure serves it. */
function methodTable(handlers: HandlerTable): Map<string, Method> {
  const out = new Map<string, Method>();
  for (const def of Object.values(packageDefinition())) {
    if ('format' in def) continue; // a message or an enum, not a service
    for (const m of Object.values<protoLoader.MethodDefinition<object, object>>(def)) {
      const u = handlers.unary.get(m.path);
      const s = handlers.serverStream.get(m.path);
      const b = handlers.bidi.get(m.path);
      let call: Kind | undefined;
      if (!m.requestStream && !m.responseStream && u) call = { kind: 'unary', handler: u };
      else if (!m.requestStream && m.responseStream && s)
        call = { kind: 'serverStream', handler: s };
      else if (m.requestStream && m.responseStream && b) call = { kind: 'bidi', handler: b };
      out.set(m.path, {
        path: m.path,
        decode: (bytes) => m.requestDeserialize(bytes),
        encode: (value) => m.responseSerialize(value),
        call,
      });
    }
  }
  return out;
}

/** Request metadata: lower-case keys to text values; binary `-bin` keys and pseudo-headers left out. */
function metadataOf(headers: http2.IncomingHttpHeaders): Map<string, string> {
  const out = new Map<string, string>();
  for (const key in headers) {
    if (key.startsWith(':') || key.endsWith('-bin')) continue;
    const v = headers[key];
    if (typeof v === 'string') out.set(key, v);
    else if (Array.isArray(v) && v.length > 0) out.set(key, v[v.length - 1] as string);
  }
  return out;
}

function statusFields(s: Status): http2.OutgoingHttpHeaders {
  return s.details === ''
    ? { 'grpc-status': String(s.code) }
    : { 'grpc-status': String(s.code), 'grpc-message': encodeGrpcMessage(s.details) };
}

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = Object.freeze({
  ':status': 200,
  'content-type': 'application/grpc+proto',
});

/**
 * One call on one HTTP/2 stream: the response headers go out with the first message (or not at
 * all for a trailers-only answer), the status in the trailers, exactly once.
 */
class Call {
  private headersSent = false;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  /** Framed messages waiting for this turn's write (send). */
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;
  /** The last write was refused until 'drain'. */
  private blocked = false;
  private writableWaiters: (() => void)[] = [];
  /** Called once when the call ends for any reason (the scope's release). */
  onFinish: (() => void) | undefined;

  constructor(readonly stream: http2.ServerHttp2Stream) {}

  get done(): boolean {
    return this.finished;
  }

  /** End with DEADLINE_EXCEEDED after `ms` unless finished before; `onExpire` runs first. */
  setDeadline(ms: number, onExpire: () => void): void {
    this.timer = setTimeout(() => {
      onExpire();
      this.finish(DEADLINE_EXCEEDED);
    }, ms);
  }

  /**
   * Queue one response message. Messages of one event-loop turn leave in one write (a watch
   * stream sends one response per watcher per revision: one DATA frame for all of them instead
   * of one each). False when the writer should wait (`writable`) before sending more.
   */
  send(body: Buffer): boolean {
    if (this.finished || this.stream.destroyed) return true;
    this.queued.push(frameMessage(body));
    this.queuedBytes += body.length + MESSAGE_HEADER_BYTES;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return !this.blocked && this.queuedBytes < QUEUED_BYTES_MAX;
  }

  /** Resolves once the writer may send again (the stream drained, or the call is over). */
  writable(): Promise<void> {
    if (this.finished || this.stream.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.writableWaiters.push(resolve));
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.queued.length === 0 || this.stream.destroyed || this.finished) return;
    const out = this.queued.length === 1 ? (this.queued[0] as Buffer) : Buffer.concat(this.queued);
    this.queued = [];
    this.queuedBytes = 0;
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    }
    if (this.stream.write(out)) {
      if (!this.blocked) this.wakeWriters();
    } else if (!this.blocked) {
      this.blocked = true;
      this.stream.once('drain', () => {
        this.blocked = false;
        this.wakeWriters();
      });
    }
  }

  private wakeWriters(): void {
    const waiters = this.writableWaiters;
    this.writableWaiters = [];
    for (const w of waiters) w();
  }

  /** The last message and OK in one go (a unary answer). */
  reply(body: Buffer): void {
    if (this.finished || this.stream.destroyed) return this.finish(OK);
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    }
    this.end(OK, frameMessage(body));
  }

  finish(status: Status): void {
    if (this.finished) return;
    if (this.stream.destroyed || this.stream.closed) {
      this.settle();
      return;
    }
    if (!this.headersSent && this.queued.length === 0) {
      // Trailers-only: the status rides in the one HEADERS frame.
      this.headersSent = true;
      this.settle();
      this.stream.respond({ ...RESPONSE_HEADERS, ...statusFields(status) }, { endStream: true });
      return;
    }
    this.end(status, undefined);
  }

  private end(status: Status, last: Buffer | undefined): void {
    if (this.queued.length > 0) this.flush();
    this.settle();
    this.stream.once('wantTrailers', () => {
      if (!this.stream.destroyed) this.stream.sendTrailers(statusFields(status));
    });
    if (last === undefined) this.stream.end();
    else this.stream.end(last);
  }

  private settle(): void {
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.wakeWriters();
    const f = this.onFinish;
    this.onFinish = undefined;
    f?.();
  }
}

export function createGrpcServer(opts: GrpcServerOptions): GrpcServer {
  const { handlers, tracker, config, log } = opts;
  const methods = methodTable(handlers);
  // etcd's receive limit: the request limit plus gRPC overhead (`grpcOverheadBytes` in etcd
  // server/etcdserver/api/v3rpc/grpc.go).
  const receiveBytesMax = config.requestBytesMax + config.grpcOverheadBytes;
  const sessions = new Set<http2.ServerHttp2Session>();
  let draining = false;
  const h2 = http2.createServer({
    // Node refuses new streams once a session holds more than this (ENHANCE_YOUR_CALM); a watch
    // fan-out holds many. grpc-js lifts the limit the same way.
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
    maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
  });
  h2.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    servePastPeerGoaway(session);
    if (draining) session.close();
  });
  // Node's server forwards every session 'error' here (its own listener on each session).
  h2.on('sessionError', (err) => log.info({ err }, 'client API: HTTP/2 session error'));

  /** Start a call's scope, or end the call at once with the refusal. */
  const begin = (
    call: Call,
    method: string,
    metadata: Map<string, string>,
    requestBytes: number | undefined,
    stream: boolean,
  ): CallScope | undefined => {
    try {
      const scope = tracker.begin({
        method,
        metadata,
        ...(requestBytes === undefined ? {} : { requestBytes }),
        stream,
      });
      call.onFinish = () => scope.end();
      return scope;
    } catch (e) {
      call.finish(grpcStatusOf(tracker.failure(method, e)));
      return undefined;
    }
  };

  /** How a streaming handler's end becomes the call's status. */
  const endStream = (
    call: Call,
    method: string,
    scope: CallScope,
    error?: { e: unknown },
  ): void => {
    const status = scope.abortStatus() ?? (error && tracker.failure(method, error.e));
    call.finish(status === undefined ? OK : grpcStatusOf(status));
  };

  h2.on('stream', (stream, headers) => {
    // A reset stream is the client's business; its 'close' ends the call.
    stream.on('error', () => undefined);
    const call = new Call(stream);
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const path = headers[':path'] ?? '';
    const method = methods.get(path);
    if (method?.call === undefined) {
      call.finish({
        code: GrpcStatus.UNIMPLEMENTED,
        details: `The server does not implement the method ${path}`,
      });
      return;
    }
    const kind = method.call;
    const metadata = metadataOf(headers);
    const encodingHeader = headers['grpc-encoding'];
    const reader = new MessageReader(
      receiveBytesMax,
      typeof encodingHeader === 'string' ? encodingHeader : undefined,
    );
    let scope: CallScope | undefined;
    // Deadline, client cancel (RST_STREAM) and disconnect all cancel the scope.
    stream.once('close', () => {
      if (!call.done) {
        scope?.cancel();
        call.finish(OK); // nothing reaches the client any more; this releases the scope
      }
    });
    const timeout = headers['grpc-timeout'];
    if (typeof timeout === 'string') {
      const ms = parseGrpcTimeout(timeout);
      if (ms !== undefined) call.setDeadline(ms, () => scope?.cancel());
    }

    /** Decode one request, or end the call with INTERNAL as grpc-js does for a bad message. */
    const decode = (bytes: Buffer): { ok: true; value: unknown } | { ok: false } => {
      try {
        return { ok: true, value: method.decode(bytes) };
      } catch (e) {
        call.finish({
          code: GrpcStatus.INTERNAL,
          details: `Error deserializing request: ${e instanceof Error ? e.message : String(e)}`,
        });
        return { ok: false };
      }
    };
    const encode = (resp: object): Buffer => method.encode(resp);

    if (kind.kind === 'bidi') {
      // Messages flow to the handler as they come.
      const s = begin(call, path, metadata, undefined, true);
      if (s === undefined) return;
      scope = s;
      // However the call ends (a bad request, a deadline, the client going), the handler must
      // stop: a watch loops until its signal aborts.
      call.onFinish = () => {
        s.cancel();
        s.end();
      };
      const signal = s.info.signal;
      const requests = requestsOf(
        stream,
        reader,
        decode,
        (e) => call.finish({ code: e.code, details: e.message }),
        signal,
        config.streamRequestsQueuedMax,
      );
      const send = (resp: object): Promise<void> => {
        if (signal.aborted || call.done) return Promise.resolve();
        return call.send(encode(resp)) ? Promise.resolve() : call.writable();
      };
      Promise.resolve()
        .then(() =>
          kind.handler({
            info: s.info,
            requests,
            send,
          }),
        )
        .then(
          () => endStream(call, path, s),
          (e: unknown) => endStream(call, path, s, { e }),
        );
      return;
    }

    // Unary and server-streaming calls take exactly one request, complete at half-close.
    const messages: Buffer[] = [];
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      if (call.done) return;
      try {
        for (const m of reader.push(chunk)) {
          messages.push(m);
          bytes += m.length;
        }
      } catch (e) {
        if (e instanceof GrpcWireError) call.finish({ code: e.code, details: e.message });
        else throw e;
        return;
      }
      // A second request is refused at once, not buffered until the client half-closes.
      if (messages.length > 1) {
        call.finish({
          code: GrpcStatus.UNIMPLEMENTED,
          details: 'Received a second request message for server streaming method',
        });
        messages.length = 0;
      }
    });
    stream.once('end', () => {
      if (call.done) return;
      // A second message was refused as it arrived ('data' above).
      if (messages.length === 0 || reader.partial) {
        call.finish({ code: GrpcStatus.INTERNAL, details: 'Received no request message' });
        return;
      }
      const d = decode(messages[0] as Buffer);
      if (!d.ok) return;
      const s = begin(call, path, metadata, bytes, kind.kind === 'serverStream');
      if (s === undefined) return;
      scope = s;
      if (kind.kind === 'unary') {
        // One catch for the handler and for encoding its answer: a response that does not
        // serialize is a handler bug, answered INTERNAL, never an unhandled rejection.
        Promise.resolve()
          .then(() => kind.handler(d.value, s.info))
          .then((resp) => {
            if (!call.done) call.reply(encode(resp));
          })
          .catch((e: unknown) => call.finish(grpcStatusOf(tracker.failure(path, e))));
        return;
      }
      const send = (resp: object): void => {
        if (!s.info.signal.aborted) call.send(encode(resp));
      };
      Promise.resolve()
        .then(() => kind.handler(d.value, s.info, send))
        .then(
          () => endStream(call, path, s),
          (e: unknown) => endStream(call, path, s, { e }),
        );
    });
  });

  return {
    handleConnection: (connection) => h2.emit('connection', connection),
    drain: () => {
      draining = true;
      for (const s of sessions) s.close();
    },
    closed: async () => {
      await Promise.all(
        [...sessions].map((s) => new Promise<void>((resolve) => s.once('close', () => resolve()))),
      );
    },
    destroy: () => {
      for (const s of sessions) s.destroy();
    },
  };
}

/**
 * Keep serving the streams a client opens after its own GOAWAY, and close the connection once
 * none is left (issue 14).
 *
 * A client that closes a connection sends GOAWAY, and requests it had just started can follow it
 * on the wire: nghttp2 (under grpc-js) sends control frames ahead of the HEADERS that open
 * streams (nghttp2_session.c, nghttp2_session_pop_next_ob_item). The client may do so: a GOAWAY's
 * last-stream-id bounds the streams its *receiver* initiates (RFC 9113 §6.8), and grpc-go, so
 * etcd, ignores a client's GOAWAY altogether (internal/transport/http2_server.go, HandleStreams:
 * "TODO: Handle GoAway from the client appropriately"). node:http2 instead answers a NO_ERROR
 * GOAWAY with `session.close()` (lib/internal/http2/core.js, onGoawayData), and a closed session
 * refuses every later stream (onSessionHeaders: RST_STREAM REFUSED_STREAM); with no stream left
 * it ends at once, and its GOAWAY's last-stream-id, below the refused stream, makes the client's
 * nghttp2 fail that stream as REFUSED_STREAM, which grpc-js answers UNAVAILABLE. So the
 * `close()` node calls from onGoawayData, right after it emits 'goaway', is skipped; ours (drain)
 * still closes.
 *
 * nghttp2 wants no more input once a GOAWAY was received and no stream is open
 * (nghttp2_session_want_read), and node then stops reading the socket (node_http2.cc,
 * Http2Session::MaybeStopReading) for good: a stream whose HEADERS come in a later read than the
 * GOAWAY is never seen, and the connection would hang. So once no stream is open after the
 * client's GOAWAY, the session closes as node would have: our GOAWAY's last-stream-id tells the
 * client which of its streams were not processed and may be retried (RFC 9113 §6.8).
 */
function servePastPeerGoaway(session: http2.ServerHttp2Session): void {
  const nodeClose = session.close.bind(session);
  let peerGoaway = false;
  /** True from the 'goaway' event to the end of that turn: node's own close() comes then. */
  let skipClose = false;
  let open = 0;
  const closeIfIdle = (): void => {
    if (peerGoaway && open === 0 && !session.closed && !session.destroyed) nodeClose();
  };
  session.on('goaway', (code: number) => {
    // Any other code is a connection error: node destroys the session, as it should.
    if (code !== http2.constants.NGHTTP2_NO_ERROR) return;
    peerGoaway = true;
    skipClose = true;
    queueMicrotask(() => (skipClose = false));
    // Streams that came in the same read as the GOAWAY are counted by then ('stream' is
    // emitted on the next tick).
    setImmediate(closeIfIdle);
  });
  session.close = (callback?: () => void): void => {
    if (skipClose) {
      skipClose = false;
      return;
    }
    nodeClose(callback);
  };
  session.on('stream', (stream: http2.ServerHttp2Stream) => {
    open++;
    stream.once('close', () => {
      open--;
      closeIfIdle();
    });
  });
}

/**
 * A bidi call's requests, decoded, in arrival order: the iteration ends when the client
 * half-closes, the stream closes or `signal` aborts. At most `queuedMax` decoded requests wait;
 * beyond that the HTTP/2 stream is paused, and its flow control reaches the client. A malformed
 * request ends the iteration after `onBad` (which ends the call with a status).
 */
function requestsOf(
  source: http2.ServerHttp2Stream,
  reader: MessageReader,
  decode: (bytes: Buffer) => { ok: true; value: unknown } | { ok: false },
  onWireError: (e: GrpcWireError) => void,
  signal: AbortSignal,
  queuedMax: number,
): AsyncIterable<unknown> {
  const queue: unknown[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const end = (): void => {
    ended = true;
    poke();
  };
  source.on('data', (chunk: Buffer) => {
    if (ended) return;
    let msgs: Buffer[];
    try {
      msgs = reader.push(chunk);
    } catch (e) {
      if (!(e instanceof GrpcWireError)) throw e;
      onWireError(e);
      end();
      return;
    }
    for (const m of msgs) {
      const d = decode(m);
      if (!d.ok) {
        end();
        return;
      }
      queue.push(d.value);
    }
    if (queue.length >= queuedMax) source.pause();
    poke();
  });
  source.once('end', end);
  source.once('close', end);
  signal.addEventListener('abort', end, { once: true });
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          if (signal.aborted) return;
          if (queue.length > 0) {
            const next = queue.shift();
            if (source.isPaused() && queue.length < queuedMax) source.resume();
            yield next;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        signal.removeEventListener('abort', end);
      }
    },
  };
}
