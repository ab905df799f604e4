// The HTTP/2 server under the gRPC side and its client sessions: the limits it runs with,
// a drain that lets calls in progress finish, and what a client's own GOAWAY does (issue 14).
import * as http2 from 'node:http2';
import type { ConnectionState } from './connection-limits.js';
import { connectionStateOf } from './connection-limits.js';
import type { Logger } from './log.js';

export interface H2Sessions {
  readonly server: http2.Http2Server;
  /** Send GOAWAY on every connection: calls in progress may finish, new ones go elsewhere. */
  drain(): void;
  /** Resolves once every connection has closed. */
  closed(): Promise<void>;
  /** Cut every connection now. */
  destroy(): void;
  /** The client connection a session serves (connection-limits.ts); undefined in tests only. */
  stateOf(session: http2.Http2Session | undefined): ConnectionState | undefined;
}

export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS (api-config.ts, streamsPerConnectionMax). */
  readonly streamsPerConnectionMax: number;
}

export function createH2Sessions(log: Logger, limits: H2Limits): H2Sessions {
  const sessions = new Set<http2.ServerHttp2Session>();
  const states = new WeakMap<http2.Http2Session, ConnectionState>();
  let draining = false;
  const h2 = http2.createServer({
    // Node refuses new streams once a session holds more than this (ENHANCE_YOUR_CALM); a watch
    // fan-out holds many. grpc-js lifts the limit the same way. What a connection may hold is
    // bounded by our own limits instead (api-config.ts: streams, queued and unsent bytes).
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
    maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
    // nghttp2 resets a stream over this with REFUSED_STREAM (RFC 9113 §5.1.2), from the moment
    // the setting is sent, before the client acknowledged it (test/api/limits.test.ts shows it
    // with a client that never acknowledges).
    settings: { maxConcurrentStreams: limits.streamsPerConnectionMax },
  });
  h2.on('session', (session) => {
    const state = connectionStateOf(session.socket);
    if (state !== undefined) states.set(session, state);
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    servePastPeerGoaway(session);
    if (draining) session.close();
  });
  // Node's server forwards every session 'error' here (its own listener on each session).
  h2.on('sessionError', (err) => log.info({ err }, 'client API: HTTP/2 session error'));
  return {
    server: h2,
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
    stateOf: (session) => (session === undefined ? undefined : states.get(session)),
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
