// The gRPC side of the client API: a grpc.Server with every service of tenure's protos, each
// method bound to its handler through one wrapper per call kind. The wrappers do what etcd's
// interceptors do (size limit, `hasleader`, leader loss) and turn every failure into a status:
// expected ones carry etcd's code and text, a handler bug becomes Internal and a log line.
// Methods without a handler answer UNIMPLEMENTED (grpc-js's default); Auth is not in the protos,
// so its calls get UNIMPLEMENTED as an unknown service.
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import type { ClientApiConfig } from './api-config.js';
import type { CallScope, CallTracker } from './call-scope.js';
import type { ApiStatus } from './status.js';
import type { BidiHandler, ServerStreamHandler, UnaryHandler } from './convert.js';
import type { HandlerTable } from './handler-table.js';
import { packageDefinition } from './protos.js';
import { grpcStatusOf } from './status.js';
import { messagesOf, writerOf } from './stream-io.js';

export interface GrpcServerOptions {
  readonly handlers: HandlerTable;
  readonly tracker: CallTracker;
  readonly config: ClientApiConfig;
}

/** Request metadata as a map of lower-case keys to text values (binary `-bin` keys skipped). */
function metadataMap(md: grpc.Metadata): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(md.getMap())) {
    if (typeof value === 'string') out.set(key.toLowerCase(), value);
  }
  return out;
}

function serviceError(s: ApiStatus): Partial<grpc.StatusObject> {
  return grpcStatusOf(s);
}

export function createGrpcServer(opts: GrpcServerOptions): grpc.Server {
  const { handlers, tracker, config } = opts;
  const server = new grpc.Server({
    // etcd's receive limit: the request limit plus gRPC overhead (reference b.2, "Limits").
    'grpc.max_receive_message_length': config.requestBytesMax + config.grpcOverheadBytes,
  });
  // Encoded sizes of decoded requests, for the request size check.
  const sizes = new WeakMap<object, number>();
  const sizeOf = (req: unknown): number | undefined =>
    typeof req === 'object' && req !== null ? sizes.get(req) : undefined;

  /** Start a call, or end it at once with the refusal status. */
  const begin = (
    method: string,
    call:
      | grpc.ServerUnaryCall<unknown, object>
      | grpc.ServerWritableStream<unknown, object>
      | grpc.ServerDuplexStream<unknown, object>,
    request: unknown,
    stream: boolean,
  ): CallScope | ApiStatus => {
    const requestBytes = sizeOf(request);
    try {
      const scope = tracker.begin({
        method,
        metadata: metadataMap(call.metadata),
        ...(requestBytes === undefined ? {} : { requestBytes }),
        stream,
      });
      // Deadline, client cancel and disconnect all arrive as 'cancelled'.
      (call as NodeJS.EventEmitter).on('cancelled', () => scope.cancel());
      return scope;
    } catch (e) {
      return tracker.failure(method, e);
    }
  };
  const isScope = (x: CallScope | ApiStatus): x is CallScope => 'info' in x;

  const unary =
    (method: string, handler: UnaryHandler) =>
    (call: grpc.ServerUnaryCall<unknown, object>, callback: grpc.sendUnaryData<object>): void => {
      const scope = begin(method, call, call.request, false);
      if (!isScope(scope)) return callback(serviceError(scope));
      Promise.resolve()
        .then(() => handler(call.request, scope.info))
        .then(
          (resp) => callback(null, resp),
          (e: unknown) => callback(serviceError(tracker.failure(method, e))),
        )
        .finally(() => scope.end());
    };

  /** End a stream with OK, or with the status of whatever ended it. */
  const finishStream = (
    method: string,
    call: grpc.ServerWritableStream<unknown, object> | grpc.ServerDuplexStream<unknown, object>,
    scope: CallScope,
    error: { readonly e: unknown } | undefined,
  ): void => {
    scope.end();
    const status = scope.abortStatus() ?? (error && tracker.failure(method, error.e));
    if (status === undefined) call.end();
    else call.emit('error', serviceError(status));
  };

  const serverStream =
    (method: string, handler: ServerStreamHandler) =>
    (call: grpc.ServerWritableStream<unknown, object>): void => {
      const scope = begin(method, call, call.request, true);
      if (!isScope(scope)) {
        call.emit('error', serviceError(scope));
        return;
      }
      const send = (resp: object): void => {
        if (!scope.info.signal.aborted && !call.writableEnded) call.write(resp);
      };
      Promise.resolve()
        .then(() => handler(call.request, scope.info, send))
        .then(
          () => finishStream(method, call, scope, undefined),
          (e: unknown) => finishStream(method, call, scope, { e }),
        );
    };

  const bidi =
    (method: string, handler: BidiHandler) =>
    (call: grpc.ServerDuplexStream<unknown, object>): void => {
      const scope = begin(method, call, undefined, true);
      if (!isScope(scope)) {
        call.emit('error', serviceError(scope));
        return;
      }
      const signal = scope.info.signal;
      Promise.resolve()
        .then(() =>
          handler({
            info: scope.info,
            requests: messagesOf(call, signal, config.streamRequestsQueuedMax),
            send: writerOf(call, signal),
          }),
        )
        .then(
          () => finishStream(method, call, scope, undefined),
          (e: unknown) => finishStream(method, call, scope, { e }),
        );
    };

  for (const def of Object.values(packageDefinition())) {
    if ('format' in def) continue; // a message or an enum, not a service
    const service: Record<string, protoLoader.MethodDefinition<object, object>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [methodName, m] of Object.entries(def)) {
      const measured: protoLoader.MethodDefinition<object, object> = {
        ...m,
        requestDeserialize: (bytes: Buffer): object => {
          const req = m.requestDeserialize(bytes);
          sizes.set(req, bytes.length);
          return req;
        },
      };
      service[methodName] = measured;
      const u = handlers.unary.get(m.path);
      const s = handlers.serverStream.get(m.path);
      const b = handlers.bidi.get(m.path);
      if (!m.requestStream && !m.responseStream && u) impl[methodName] = unary(m.path, u);
      else if (!m.requestStream && m.responseStream && s) {
        impl[methodName] = serverStream(m.path, s);
      } else if (m.requestStream && m.responseStream && b) impl[methodName] = bidi(m.path, b);
    }
    // grpc-js answers UNIMPLEMENTED for the methods left out of `impl`.
    server.addService(service, impl);
  }
  return server;
}
