// One TCP port per client URL, serving gRPC (HTTP/2) and the JSON gateway (HTTP/1.1) together,
// as etcd's client port does. Each connection's first bytes decide: the HTTP/2 client preface
// goes to the gRPC server (grpc-server.ts, on node:http2), anything else to a node:http server that runs
// the gateway. The bytes read to decide are put back (`unshift`) before the hand-over.
import * as http from 'node:http';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { AuthorityFixStream, SERVER_PREFACE_SETTINGS, sniffH2 } from './h2-authority.js';
import type { ClientApiConfig } from './api-config.js';
import type { ClientApiMetrics } from './api-metrics.js';
import { DEFAULT_CLIENT_API_CONFIG } from './api-config.js';
import type { KvBackend } from '../../replica/member/backend.js';
import { CallTracker } from './call-scope.js';
import { createGateway } from './gateway.js';
import { createGrpcServer } from './grpc-server.js';
import { clientApiHandlers } from './handler-table.js';
import type { ClientTlsFiles } from './client-tls.js';
import {
  clientTlsServerOptions,
  TlsConfigError,
  VERIFIED_CN,
  verifiedCommonName,
} from './client-tls.js';
import type { Logger } from './log.js';
import { silentLogger } from './log.js';
import type { ConnectionState, ConnectionStats } from './connection-limits.js';
import { CONNECTION_STATE, ConnectionGate } from './connection-limits.js';

/** RFC 9113 §3.4: every HTTP/2 connection starts with these 24 bytes. */
const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * How long a new connection may take to say what it is (its TLS handshake; then its first bytes,
 * and for HTTP/2 its first request's headers) before it is dropped, in ms.
 */
const FIRST_BYTES_TIMEOUT_MS = 10_000;
/** Bytes an HTTP/2 client may send before its first request is complete. */
const H2_OPENING_BYTES_MAX = 1024 * 1024;
/** After the calls left at the end of the grace period are aborted, their answers get this long. */
const ABORTED_CALLS_SETTLE_MS = 100;

export interface ClientApiOptions {
  readonly backend: KvBackend;
  /** `http://host:port` or `https://host:port` each; port 0 binds an ephemeral port (`ports`). */
  readonly urls: readonly string[];
  /** Certificates for the https:// URLs (client-tls.ts). */
  readonly tls?: ClientTlsFiles;
  readonly log?: Logger;
  readonly config?: Partial<ClientApiConfig>;
  /** Counted while serving, and GET /metrics answered with (src/server/metrics). */
  readonly metrics?: ClientApiMetrics;
  /**
   * HTTP/1.1 requests go here first (the dashboard's /ui, src/server/ui); it answers those it
   * owns and returns false to leave the rest to the JSON gateway.
   */
  readonly httpRoutes?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}

export interface ClientApi {
  /** The bound port of each URL, in order. */
  readonly ports: readonly number[];
  /** Stop accepting, end streams with `etcdserver: server stopped`, and close every connection. */
  close(): Promise<void>;
  /** What each open client connection holds now (connection-limits.ts), for tests. */
  connections(): ConnectionStats[];
}

interface ListenAddress {
  readonly host: string;
  readonly port: number;
  readonly secure: boolean;
}

/** Parse a client URL: http:// is served plain, https:// behind TLS. */
export function parseClientUrl(url: string): ListenAddress {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`tenure: client URL ${url}: only http:// and https:// are served`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  const port = u.port === '' ? 2379 : Number(u.port);
  return { host, port, secure: u.protocol === 'https:' };
}

type Protocol = 'http2' | 'http1' | 'undecided';

/** Which server a connection belongs to, from its first bytes. */
export function sniffProtocol(first: Buffer): Protocol {
  const n = Math.min(first.length, HTTP2_PREFACE.length);
  if (!first.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n))) return 'http1';
  return n === HTTP2_PREFACE.length ? 'http2' : 'undecided';
}

export async function startClientApi(opts: ClientApiOptions): Promise<ClientApi> {
  const log = opts.log ?? silentLogger;
  const config: ClientApiConfig = { ...DEFAULT_CLIENT_API_CONFIG, ...opts.config };
  const tracker = new CallTracker({ backend: opts.backend, log, config });
  const metrics = opts.metrics;
  const handlers = clientApiHandlers(opts.backend, config, metrics?.locks);
  const gate = new ConnectionGate(config, log);
  const grpcServer = createGrpcServer({
    handlers,
    tracker,
    config,
    log,
    ...(metrics === undefined ? {} : { rpcStats: metrics.rpc }),
  });
  const gateway = createGateway({
    backend: opts.backend,
    handlers,
    tracker,
    config,
    log,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const routes = opts.httpRoutes;
  const httpServer = http.createServer(
    routes === undefined ? gateway : (req, res) => void (routes(req, res) || gateway(req, res)),
  );
  // The gateway's own errors on a socket (malformed HTTP) must never reach the process.
  httpServer.on('clientError', (err, socket) => {
    log.warn({ err }, 'client API: bad HTTP request');
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  const route = (socket: net.Socket, state: ConnectionState): void => {
    // A socket error before or after the hand-over (a reset peer) is the peer's problem.
    socket.on('error', (err) => log.info({ err }, 'client API: connection error'));
    // Small answers must leave at once: with Nagle on, a reply waits for the client's delayed
    // ACK (about 40 ms on Linux) behind the previous one.
    socket.setNoDelay(true);
    socket.setTimeout(FIRST_BYTES_TIMEOUT_MS, () => socket.destroy());
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      const protocol = sniffProtocol(seen);
      if (protocol === 'undecided') return;
      socket.off('data', onData);
      if (protocol === 'http2') {
        // Answer the preface ourselves and look at the first request's :authority (etcd 3.4's
        // Go client may send a URL there, which Node's HTTP/2 refuses): h2-authority.ts.
        socket.write(SERVER_PREFACE_SETTINGS);
        let h2seen = seen;
        const onH2 = (chunk?: Buffer): void => {
          if (chunk !== undefined) h2seen = Buffer.concat([h2seen, chunk]);
          if (h2seen.length > H2_OPENING_BYTES_MAX) {
            log.info({ bytes: h2seen.length }, 'client API: HTTP/2 opening too long');
            socket.destroy();
            return;
          }
          let sniff;
          try {
            sniff = sniffH2(h2seen);
          } catch (err) {
            log.info({ err }, 'client API: bad HTTP/2 opening');
            socket.destroy();
            return;
          }
          if (sniff.kind === 'wait') return;
          socket.off('data', onH2);
          socket.setTimeout(0);
          socket.pause();
          gate.identified(state, 'grpc', socket);
          let connection: net.Socket | AuthorityFixStream = socket;
          if (sniff.kind === 'pass') socket.unshift(sniff.replay);
          else connection = new AuthorityFixStream(socket, sniff.replay);
          const cn = socket instanceof tls.TLSSocket ? verifiedCommonName(socket) : undefined;
          if (cn !== undefined) (connection as { [VERIFIED_CN]?: string })[VERIFIED_CN] = cn;
          (connection as { [CONNECTION_STATE]?: ConnectionState })[CONNECTION_STATE] = state;
          grpcServer.handleConnection(connection);
        };
        socket.on('data', onH2);
        onH2();
        return;
      }
      socket.setTimeout(0);
      socket.pause();
      gate.identified(state, 'gateway', socket);
      (socket as { [CONNECTION_STATE]?: ConnectionState })[CONNECTION_STATE] = state;
      socket.unshift(seen);
      httpServer.emit('connection', socket);
      // node:http reads through 'data' events once the socket flows again, starting with the
      // bytes put back above. (The HTTP/2 session resumes the socket itself; resuming it here
      // as well would hand it the preface twice.)
      socket.resume();
    };
    socket.on('data', onData);
  };

  const listeners: net.Server[] = [];
  const ports: number[] = [];
  const addresses = opts.urls.map(parseClientUrl);
  if (addresses.some((a) => a.secure) && opts.tls === undefined)
    throw new TlsConfigError('an https:// client URL needs --cert-file and --key-file');
  const tlsOptions = opts.tls === undefined ? undefined : clientTlsServerOptions(opts.tls);
  try {
    for (const [i, url] of opts.urls.entries()) {
      const { host, port, secure } = addresses[i] as ListenAddress;
      const server = secure ? secureServer(tlsOptions as tls.TlsOptions) : plainServer();
      listeners.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const address = server.address();
      ports.push(typeof address === 'object' && address !== null ? address.port : port);
      server.on('error', (err: Error) => log.error({ err, url }, 'client API: listener error'));
      log.info({ url, port: ports[ports.length - 1] }, 'client API listening');
    }
  } catch (e) {
    for (const s of listeners) s.close();
    grpcServer.destroy();
    throw e;
  }

  function plainServer(): net.Server {
    return net.createServer((socket) => {
      const state = gate.admit(socket);
      if (state !== undefined) route(socket, state);
    });
  }

  function secureServer(options: tls.TlsOptions): net.Server {
    // The decrypted stream is routed exactly as a plain socket: ALPN is offered for clients
    // that insist on it (grpc-go does), but the first bytes still decide. The TCP socket is
    // admitted (connection-limits.ts) before the TLS server sees it, so a refused connection
    // costs no handshake; the TLS server itself never listens.
    const handshaking = new Map<string, ConnectionState>();
    const keyOf = (s: net.Socket): string => `${s.remoteAddress ?? ''}|${s.remotePort ?? 0}`;
    const tlsServer = tls.createServer(
      { ...options, handshakeTimeout: FIRST_BYTES_TIMEOUT_MS },
      (socket) => {
        const key = keyOf(socket);
        const state = handshaking.get(key);
        handshaking.delete(key);
        if (state === undefined) socket.destroy();
        else route(socket, state);
      },
    );
    // A client with no certificate, a foreign CA, plain text on a TLS port or a handshake that
    // times out: refused, logged. With a listener here node leaves the socket open (even after
    // ERR_TLS_HANDSHAKE_TIMEOUT), so it is destroyed here.
    tlsServer.on('tlsClientError', (err, socket) => {
      log.info({ err }, 'client API: TLS handshake refused');
      socket.destroy();
    });
    return net.createServer((raw) => {
      const state = gate.admit(raw);
      if (state === undefined) return;
      // The TLS socket has the TCP socket's remote address and port: the key finds the state.
      const key = keyOf(raw);
      handshaking.set(key, state);
      raw.once('close', () => {
        if (handshaking.get(key) === state) handshaking.delete(key);
      });
      tlsServer.emit('connection', raw);
    });
  }

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    // net.Server.close() calls back only once every connection is gone, so it is awaited last.
    const unbound = Promise.all(listeners.map((s) => new Promise<void>((r) => s.close(() => r()))));
    gate.destroyIdle();
    // Streams end now; unary calls in progress finish (GOAWAY sends new ones elsewhere), within
    // the grace period, after which what is left is answered `server stopped`.
    tracker.abortStreams();
    grpcServer.drain();
    httpServer.closeIdleConnections();
    await tracker.unaryDrained(config.shutdownGraceMs);
    tracker.abortAll();
    // Every call is answered now, or aborted and being answered: what a client keeps open after
    // our GOAWAY carries nothing more. Its answers get ABORTED_CALLS_SETTLE_MS to leave, and then
    // the connections are closed rather than left to the rest of the grace period (which held
    // every SIGTERM's exit up 2 s, the whole grace, behind clients that keep idle connections).
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        grpcServer.destroy();
        httpServer.closeAllConnections();
        resolve();
      }, ABORTED_CALLS_SETTLE_MS);
      let pending = 2;
      const one = (): void => {
        if (--pending > 0) return;
        clearTimeout(force);
        resolve();
      };
      void grpcServer.closed().then(one);
      httpServer.close(one);
    });
    // The sockets under those sessions, and any the HTTP/2 layer let go of without closing: the
    // listener's close waits for every one of them (it held each SIGTERM's exit ~2.5 s).
    gate.destroyAll();
    await unbound;
  };
  return {
    ports,
    close: () => (closing ??= close()),
    connections: () => [...gate.live].map((c) => c.stats()),
  };
}
