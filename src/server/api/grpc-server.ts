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
//
// Here: a new stream's checks, its Call, deadline and scope. Elsewhere: the sessions
// (h2-sessions.ts), the method table (grpc-methods.ts), the Call (grpc-call.ts), the call paths
// (grpc-single-request.ts, grpc-bidi.ts).
import type { Duplex } from 'node:stream';
import { GrpcStatus } from './grpc-codes.js';
import type { ClientApiConfig } from './api-config.js';
import type { CallScope, CallTracker } from './call-scope.js';
import { serveBidi } from './grpc-bidi.js';
import type { Status } from './grpc-call.js';
import { Call, OK } from './grpc-call.js';
import type { CallContext, Decoded } from './grpc-call-context.js';
import { metadataOf } from './grpc-metadata.js';
import { VERIFIED_CN } from './client-tls.js';
import { methodTable } from './grpc-methods.js';
import { serveSingleRequest } from './grpc-single-request.js';
import { createH2Sessions } from './h2-sessions.js';
import { connectionUnsentRefusal } from './connection-limits.js';
import type { HandlerTable } from './handler-table.js';
import type { Logger } from './log.js';
import type { RpcStats } from './rpc-stats.js';
import { grpcStatusOf } from './status.js';
import { MessageReader, parseGrpcTimeout } from './grpc-wire.js';

export interface GrpcServerOptions {
  readonly handlers: HandlerTable;
  readonly tracker: CallTracker;
  readonly config: ClientApiConfig;
  readonly log: Logger;
  /** Per-method call counts for /metrics (rpc-stats.ts); none counted without. */
  readonly rpcStats?: RpcStats;
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

export function createGrpcServer(opts: GrpcServerOptions): GrpcServer {
  const { handlers, tracker, config, log, rpcStats } = opts;
  const methods = methodTable(handlers);
  // etcd's receive limit: the request limit plus gRPC overhead (`grpcOverheadBytes` in etcd
  // server/etcdserver/api/v3rpc/grpc.go).
  const receiveBytesMax = config.requestBytesMax + config.grpcOverheadBytes;
  const sessions = createH2Sessions(log, config);
  const h2 = sessions.server;
  const unsentRefusal: Status = {
    code: GrpcStatus.RESOURCE_EXHAUSTED,
    details: connectionUnsentRefusal(config.connectionUnsentBytesMax),
  };

  h2.on('stream', (stream, headers) => {
    // A reset stream is the client's business; its 'close' ends the call.
    stream.on('error', () => undefined);
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const connection = sessions.stateOf(stream.session);
    const path = headers[':path'] ?? '';
    // Counted from here, per method of the protos (a path outside them has no labels to count
    // under, as grpc-go never reaches go-grpc-prometheus's interceptor for one).
    const stats = rpcStats?.byPath.get(path);
    const call = new Call(stream, config.streamQueuedBytesMax, connection, stats);
    // A client that leaves this much unread gets no more work done until it reads: refused
    // before anything runs, so a refused write is never applied (api-config.ts).
    if (connection !== undefined && connection.unsentBytes >= config.connectionUnsentBytesMax) {
      call.finish(unsentRefusal);
      return;
    }
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
    // The verified certificate's CN, left on the connection by the client listener.
    const commonName = config.clientCertAuth
      ? (stream.session?.socket as { [VERIFIED_CN]?: string } | undefined)?.[VERIFIED_CN]
      : undefined;
    const encodingHeader = headers['grpc-encoding'];
    const reader = new MessageReader(
      receiveBytesMax,
      typeof encodingHeader === 'string' ? encodingHeader : undefined,
    );
    let scope: CallScope | undefined;
    // Deadline, client cancel (RST_STREAM) and disconnect all cancel the scope.
    stream.once('close', () => {
      call.streamClosed();
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

    const ctx: CallContext = {
      stream,
      call,
      path,
      reader,
      decode: (bytes: Buffer): Decoded => {
        try {
          const value = method.decode(bytes);
          if (stats !== undefined) stats.received++;
          return { ok: true, value };
        } catch (e) {
          call.finish({
            code: GrpcStatus.INTERNAL,
            details: `Error deserializing request: ${e instanceof Error ? e.message : String(e)}`,
          });
          return { ok: false };
        }
      },
      encode: (resp: object): Buffer => method.encode(resp),
      begin: (requestBytes, isStream) => {
        try {
          const s = tracker.begin({
            method: path,
            metadata,
            ...(commonName === undefined ? {} : { commonName }),
            ...(requestBytes === undefined ? {} : { requestBytes }),
            ...(connection === undefined ? {} : { connection }),
            stream: isStream,
          });
          call.onFinish = () => s.end();
          return s;
        } catch (e) {
          call.finish(grpcStatusOf(tracker.failure(path, e)));
          return undefined;
        }
      },
      endStream: (name, s, error) => {
        const status = s.abortStatus() ?? (error && tracker.failure(name, error.e));
        call.finish(status === undefined ? OK : grpcStatusOf(status));
      },
      failure: (e) => grpcStatusOf(tracker.failure(path, e)),
      setScope: (s) => (scope = s),
    };
    if (kind.kind === 'bidi') serveBidi(ctx, kind.handler, config.streamRequestsQueuedMax);
    else serveSingleRequest(ctx, kind);
  });

  return {
    handleConnection: (connection) => h2.emit('connection', connection),
    drain: () => sessions.drain(),
    closed: () => sessions.closed(),
    destroy: () => sessions.destroy(),
  };
}
