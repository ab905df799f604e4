// The HTTP/1.1 JSON gateway under /v3/ (etcd server/embed/serve.go): POST a protojson request,
// get the protojson response, as etcd's grpc-gateway serves it. Calls run through the same
// handler table and call checks as gRPC. Streams (watch, lease keepalive, observe, snapshot)
// answer with one `{"result": ...}` JSON object per line; their request body is one JSON object
// (or several, one per line). Errors follow grpc-gateway: the HTTP status from the gRPC code and
// the body `{"error", "code", "message"}`. A stream's lines wait for the client to read them
// (backpressure), so a client that never reads holds one socket buffer of answers; the watches
// and keepalive streams of one connection count against the same per-connection limits as
// gRPC's (connection-limits.ts).
import type * as http from 'node:http';
import type protobuf from 'protobufjs';
import { SERVER_VERSION } from '../../replica/member/backend.js';
import type { ClientApiConfig } from './api-config.js';
import type { MetricsText } from './api-metrics.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { CallScope, CallTracker } from './call-scope.js';
import type { HandlerTable } from './handler-table.js';
import type { Logger } from './log.js';
import { fromProtoJson, loadProtoRoot, toProtoJson } from './protojson.js';
import { connectionStateOf } from './connection-limits.js';
import type { ApiStatus } from './status.js';
import { ApiError, grpcStatusOf, statusOf, unimplemented } from './status.js';
import { messagesFrom } from './stream-io.js';

export interface GatewayDeps {
  readonly backend: KvBackend;
  readonly handlers: HandlerTable;
  readonly tracker: CallTracker;
  readonly config: ClientApiConfig;
  readonly log: Logger;
  /** GET /metrics (etcd serves it on the client port too, embed/serve.go). */
  readonly metrics?: { scrape(): Promise<MetricsText> };
}

/** Gateway path (after /v3/) → gRPC method: the `google.api.http` options of etcd's protos. */
const ROUTES: Readonly<Record<string, string>> = {
  'kv/range': 'etcdserverpb.KV/Range',
  'kv/put': 'etcdserverpb.KV/Put',
  'kv/deleterange': 'etcdserverpb.KV/DeleteRange',
  'kv/txn': 'etcdserverpb.KV/Txn',
  'kv/compaction': 'etcdserverpb.KV/Compact',
  watch: 'etcdserverpb.Watch/Watch',
  'lease/grant': 'etcdserverpb.Lease/LeaseGrant',
  'lease/revoke': 'etcdserverpb.Lease/LeaseRevoke',
  'kv/lease/revoke': 'etcdserverpb.Lease/LeaseRevoke',
  'lease/keepalive': 'etcdserverpb.Lease/LeaseKeepAlive',
  'lease/timetolive': 'etcdserverpb.Lease/LeaseTimeToLive',
  'kv/lease/timetolive': 'etcdserverpb.Lease/LeaseTimeToLive',
  'lease/leases': 'etcdserverpb.Lease/LeaseLeases',
  'kv/lease/leases': 'etcdserverpb.Lease/LeaseLeases',
  'cluster/member/add': 'etcdserverpb.Cluster/MemberAdd',
  'cluster/member/remove': 'etcdserverpb.Cluster/MemberRemove',
  'cluster/member/update': 'etcdserverpb.Cluster/MemberUpdate',
  'cluster/member/list': 'etcdserverpb.Cluster/MemberList',
  'cluster/member/promote': 'etcdserverpb.Cluster/MemberPromote',
  'maintenance/alarm': 'etcdserverpb.Maintenance/Alarm',
  'maintenance/status': 'etcdserverpb.Maintenance/Status',
  'maintenance/defragment': 'etcdserverpb.Maintenance/Defragment',
  'maintenance/hash': 'etcdserverpb.Maintenance/Hash',
  'maintenance/hashkv': 'etcdserverpb.Maintenance/HashKV',
  'maintenance/snapshot': 'etcdserverpb.Maintenance/Snapshot',
  'maintenance/transfer-leadership': 'etcdserverpb.Maintenance/MoveLeader',
  'maintenance/downgrade': 'etcdserverpb.Maintenance/Downgrade',
  'election/campaign': 'v3electionpb.Election/Campaign',
  'election/proclaim': 'v3electionpb.Election/Proclaim',
  'election/leader': 'v3electionpb.Election/Leader',
  'election/observe': 'v3electionpb.Election/Observe',
  'election/resign': 'v3electionpb.Election/Resign',
  'lock/lock': 'v3lockpb.Lock/Lock',
  'lock/unlock': 'v3lockpb.Lock/Unlock',
  'auth/enable': 'etcdserverpb.Auth/AuthEnable',
  'auth/disable': 'etcdserverpb.Auth/AuthDisable',
  'auth/authenticate': 'etcdserverpb.Auth/Authenticate',
  'auth/user/add': 'etcdserverpb.Auth/UserAdd',
  'auth/user/get': 'etcdserverpb.Auth/UserGet',
  'auth/user/list': 'etcdserverpb.Auth/UserList',
  'auth/user/delete': 'etcdserverpb.Auth/UserDelete',
  'auth/user/changepw': 'etcdserverpb.Auth/UserChangePassword',
  'auth/user/grant': 'etcdserverpb.Auth/UserGrantRole',
  'auth/user/revoke': 'etcdserverpb.Auth/UserRevokeRole',
  'auth/role/add': 'etcdserverpb.Auth/RoleAdd',
  'auth/role/get': 'etcdserverpb.Auth/RoleGet',
  'auth/role/list': 'etcdserverpb.Auth/RoleList',
  'auth/role/delete': 'etcdserverpb.Auth/RoleDelete',
  'auth/role/grant': 'etcdserverpb.Auth/RoleGrantPermission',
  'auth/role/revoke': 'etcdserverpb.Auth/RoleRevokePermission',
};

/** grpc-gateway's HTTP status for each gRPC code (runtime.HTTPStatusFromCode). */
const HTTP_STATUS: readonly number[] = [
  200, // OK
  499, // Canceled
  500, // Unknown
  400, // InvalidArgument
  504, // DeadlineExceeded
  404, // NotFound
  409, // AlreadyExists
  403, // PermissionDenied
  429, // ResourceExhausted
  400, // FailedPrecondition
  409, // Aborted
  400, // OutOfRange
  501, // Unimplemented
  500, // Internal
  503, // Unavailable
  500, // DataLoss
  401, // Unauthenticated
];

interface Route {
  readonly path: string;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
}

function routeTable(root: protobuf.Root): Map<string, Route> {
  const out = new Map<string, Route>();
  for (const [httpPath, grpcPath] of Object.entries(ROUTES)) {
    const [service = '', method = ''] = grpcPath.split('/');
    const m = root.lookupService(service).methods[method];
    if (m?.resolvedRequestType == null || m.resolvedResponseType == null) {
      throw new Error(`tenure: gateway route to unknown method ${grpcPath}`);
    }
    out.set(httpPath, {
      path: `/${grpcPath}`,
      requestType: m.resolvedRequestType,
      responseType: m.resolvedResponseType,
    });
  }
  return out;
}

/** A refusal by the HTTP layer itself, before any handler; `grpcCode` is for the body. */
/** The client closed its connection before its request body was whole: nobody to answer. */
class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection before its request was read');
  }
}

class HttpError extends Error {
  constructor(
    readonly httpStatus: 400 | 404 | 405 | 413,
    message: string,
  ) {
    super(message);
  }

  get grpcCode(): number {
    // InvalidArgument, NotFound, Unimplemented, ResourceExhausted.
    return { 400: 3, 404: 5, 405: 12, 413: 8 }[this.httpStatus];
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function errorBody(s: ApiStatus): { error: string; code: number; message: string } {
  const { code } = grpcStatusOf(s);
  return { error: s.message, code, message: s.message };
}

function sendStatus(res: http.ServerResponse, s: ApiStatus): void {
  const body = errorBody(s);
  sendJson(res, HTTP_STATUS[body.code] ?? 500, body);
}

/**
 * The request body, refused with 413 beyond `bytesMax`: at once when its Content-Length says
 * so, else when that many bytes arrived. Nothing past the limit is kept, and the connection is
 * closed once the 413 is out (`refuseBody`), so a client streaming a huge body is cut off
 * instead of being read to its end.
 */
function readBody(req: http.IncomingMessage, bytesMax: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const announced = Number(req.headers['content-length'] ?? 0);
    if (announced > bytesMax) {
      reject(new HttpError(413, 'request body too large'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size > bytesMax) return; // already refused
      size += chunk.length;
      if (size > bytesMax) {
        chunks.length = 0;
        reject(new HttpError(413, 'request body too large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    // Node says 'aborted' (ECONNRESET) for a socket closed mid-body: the client's doing, not
    // a handler's failure (the fuzz suite's mutated heads found it logged as one).
    req.on('error', () => reject(new ClientGoneError()));
  });
}

/** How long a connection refused with 413 stays open for its client to read the answer, in ms. */
const REFUSED_BODY_LINGER_MS = 2000;

/**
 * Answer 413 and read no more of the body. Node's own answer would either read the body to its
 * end (to reuse the connection) or, with `Connection: close`, close the socket with the body
 * unread, which makes the kernel send RST and can drop the answer still in its send buffer
 * (RFC 9112 §9.6 asks for a lingering close for this reason; the test saw the answer lost). So
 * the answer is written on the socket here, our side is half-closed, reading stops (TCP flow
 * control then stops the client; what it sent meanwhile waits in kernel buffers, never in the
 * member), and the socket is destroyed after REFUSED_BODY_LINGER_MS, or at shutdown.
 */
function refuseBody(req: http.IncomingMessage, e: HttpError): void {
  const socket = req.socket;
  socket.pause();
  const state = connectionStateOf(socket);
  if (state !== undefined) state.refused = true;
  const text = JSON.stringify({ error: e.message, code: e.grpcCode, message: e.message });
  socket.end(
    'HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
  // A timer of its own: a socket's timeout does not keep the process alive, and a paused
  // socket does not see its client go.
  const linger = setTimeout(() => socket.destroy(), REFUSED_BODY_LINGER_MS);
  socket.once('close', () => clearTimeout(linger));
}

/** One JSON value, or several separated by newlines (a stream's requests); empty = `{}`. */
function parseBodies(body: Buffer): unknown[] {
  const text = body.toString('utf8').trim();
  if (text === '') return [{}];
  try {
    return [JSON.parse(text)];
  } catch {
    try {
      return text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as unknown);
    } catch (e) {
      throw new HttpError(400, `invalid JSON body: ${(e as Error).message}`);
    }
  }
}

export function createGateway(deps: GatewayDeps): http.RequestListener {
  const routes = routeTable(loadProtoRoot());
  const { handlers, tracker, config, backend, log } = deps;
  // Base64 makes JSON bytes 4/3 of their binary size; the slack mirrors gRPC's.
  const bodyBytesMax = Math.ceil((config.requestBytesMax * 4) / 3) + config.grpcOverheadBytes;

  const serve = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const path = url.pathname.replace(/^\/v3beta\//, '/v3/').replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/health') {
      const ok = backend.hasLeader();
      return sendJson(res, ok ? 200 : 503, { health: ok ? 'true' : 'false' });
    }
    if (req.method === 'GET' && path === '/version') {
      return sendJson(res, 200, { etcdserver: SERVER_VERSION, etcdcluster: SERVER_VERSION });
    }
    if (req.method === 'GET' && path === '/metrics' && deps.metrics !== undefined) {
      const m = await deps.metrics.scrape();
      res.writeHead(200, { 'content-type': m.contentType });
      return void res.end(m.body);
    }
    if (!path.startsWith('/v3/')) throw new HttpError(404, 'Not Found');
    const name = path.slice('/v3/'.length);
    const route = routes.get(name);
    if (route === undefined) {
      if (name.startsWith('auth/')) throw new ApiError(unimplemented(`Auth ${name}`));
      throw new HttpError(404, 'Not Found');
    }
    if (req.method !== 'POST' && req.method !== 'PUT') {
      throw new HttpError(405, 'Method Not Allowed');
    }
    const bodies = parseBodies(await readBody(req, bodyBytesMax));
    const decoded = bodies.map((b) => {
      try {
        return fromProtoJson(route.requestType, b);
      } catch (e) {
        throw new HttpError(400, `invalid ${route.requestType.name}: ${(e as Error).message}`);
      }
    });
    const first = decoded[0];
    if (first === undefined) throw new HttpError(400, 'empty request');
    // grpc-gateway forwards `Authorization: <token>` as metadata (the bare token, no scheme);
    // a client certificate's CN is never used through the gateway (etcd 3.4 auth/store.go).
    const authorization = req.headers.authorization;
    const connection = connectionStateOf(req.socket);
    const scope = tracker.begin({
      method: route.path,
      metadata: new Map(authorization === undefined ? [] : [['authorization', authorization]]),
      requestBytes: Math.max(...decoded.map((d) => d.encodedBytes)),
      stream: !handlers.unary.has(route.path),
      ...(connection === undefined ? {} : { connection }),
    });
    // A client that disconnects before the answer cancels the call.
    res.on('close', () => {
      if (!res.writableFinished) scope.cancel();
    });
    try {
      await dispatch(route, decoded, scope, res);
    } finally {
      scope.end();
    }
  };

  const dispatch = async (
    route: Route,
    decoded: readonly { readonly request: object }[],
    scope: CallScope,
    res: http.ServerResponse,
  ): Promise<void> => {
    const request = decoded[0]?.request ?? {};
    const unary = handlers.unary.get(route.path);
    if (unary !== undefined) {
      const resp = await unary(request, scope.info);
      return sendJson(res, 200, toProtoJson(route.responseType, resp));
    }
    /** Write one line; resolves once the socket can take more (or the client is gone). */
    const line = (obj: object): Promise<void> => {
      if (!res.headersSent) {
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      }
      if (res.writableEnded || res.destroyed) return Promise.resolve();
      if (res.write(`${JSON.stringify(obj)}\n`)) return Promise.resolve();
      return new Promise((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    };
    const result = (resp: object): Promise<void> =>
      line({ result: toProtoJson(route.responseType, resp) });
    try {
      const serverStream = handlers.serverStream.get(route.path);
      const bidi = handlers.bidi.get(route.path);
      if (serverStream !== undefined) await serverStream(request, scope.info, result);
      else if (bidi !== undefined) {
        await bidi({
          info: scope.info,
          requests: messagesFrom(decoded.map((d) => d.request)),
          send: result,
        });
      } else throw new ApiError(unimplemented(route.path));
      const after = scope.abortStatus();
      if (after !== null) throw new ApiError(after);
    } catch (e) {
      if (!res.headersSent) throw e;
      // Mid-stream, the error is the stream's last object (grpc-gateway's stream error shape).
      const s = tracker.failure(route.path, e);
      const { code } = grpcStatusOf(s);
      void line({
        error: { grpc_code: code, http_code: HTTP_STATUS[code] ?? 500, message: s.message },
      });
    }
    res.end();
  };

  return (req, res) => {
    serve(req, res).catch((e: unknown) => {
      if (e instanceof ClientGoneError) return void res.destroy();
      if (e instanceof HttpError) {
        if (e.httpStatus === 413 && !res.headersSent) return refuseBody(req, e);
        return sendJson(res, e.httpStatus, {
          error: e.message,
          code: e.grpcCode,
          message: e.message,
        });
      }
      const s = statusOf(e) ?? tracker.failure('gateway', e);
      if (res.headersSent) return void res.end();
      sendStatus(res, s);
      log.info({ path: req.url, code: s.code }, 'gateway call failed');
    });
  };
}
