// What one client connection may hold, and which connections are let in (issue 17: "abuse by one
// client never costs others"). A connection is admitted when its TCP socket is accepted: at most
// `connectionsPerAddressMax` open from one remote IP address, and at most `openingConnectionsMax`
// still being identified (TLS handshake, first bytes), server-wide. Each admitted connection
// carries a ConnectionState: the counters the per-connection limits check (watches, keepalive
// streams, answer bytes its client has not read yet), found from a call in O(1).
import type * as net from 'node:net';
import type { ClientApiConfig } from './api-config.js';
import type { Logger } from './log.js';

/** Where a connection's state hangs on its socket (and on the stream standing in for one). */
export const CONNECTION_STATE = Symbol('tenure.connectionState');

/** A refused connection's address is logged at most once per this interval, in ms. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

export type ConnectionProtocol = 'opening' | 'grpc' | 'gateway';

/** One client connection's counters; the limits they are checked against are in api-config.ts. */
export class ConnectionState {
  protocol: ConnectionProtocol = 'opening';
  /**
   * gRPC answer bytes handed to this connection's HTTP/2 streams that have not reached the
   * socket yet (grpc-call.ts counts them from `send` to the write's callback).
   */
  unsentBytes = 0;
  /** Watchers open across this connection's Watch streams. */
  watches = 0;
  /** LeaseKeepAlive streams open on this connection. */
  keepAliveStreams = 0;
  /** Refused (a gateway 413) and open only for its client to read why: nothing to finish. */
  refused = false;
  /** Bytes of live events queued in this connection's watch hubs, for stats() only. */
  readonly watchQueues = new Set<{ readonly queuedBytes: number }>();

  /** The socket the protocol runs on: the TCP socket, or the TLS socket over it. */
  served: net.Socket;

  /** `socket` is the accepted TCP socket. */
  constructor(readonly socket: net.Socket) {
    this.served = socket;
  }

  /** For tests and operators: what this connection holds now. */
  stats(): ConnectionStats {
    let watchQueuedBytes = 0;
    for (const q of this.watchQueues) watchQueuedBytes += q.queuedBytes;
    return {
      protocol: this.protocol,
      remoteAddress: this.socket.remoteAddress ?? '',
      remotePort: this.socket.remotePort ?? 0,
      // The gateway writes straight into the socket: its buffer is what the client has not
      // read. An HTTP/2 session writes to the socket's handle, past its JS buffer.
      unsentBytes: this.unsentBytes + this.served.writableLength,
      watches: this.watches,
      keepAliveStreams: this.keepAliveStreams,
      watchQueuedBytes,
    };
  }
}

export interface ConnectionStats {
  readonly protocol: ConnectionProtocol;
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** Answer bytes queued in the member that the client has not read yet. */
  readonly unsentBytes: number;
  readonly watches: number;
  readonly keepAliveStreams: number;
  /** Live watch events queued for this connection's watch streams, in bytes of keys and values. */
  readonly watchQueuedBytes: number;
}

/** The state of the connection `carrier` (a socket, or a stream in front of one), if any. */
export function connectionStateOf(carrier: unknown): ConnectionState | undefined {
  return (carrier as { [CONNECTION_STATE]?: ConnectionState } | undefined)?.[CONNECTION_STATE];
}

/**
 * Admission of new connections. Over a limit the socket is destroyed at once, before a byte is
 * read or a TLS handshake is paid for: the protocol is not known yet (the first bytes decide),
 * so there is no HTTP/2 GOAWAY or HTTP 503 that every client would understand, and answering
 * costs what the limit is there to save. The refusal is logged, once per address per
 * REFUSAL_LOG_INTERVAL_MS, with the count of refusals since the last line.
 */
export class ConnectionGate {
  private readonly perAddress = new Map<string, number>();
  private readonly opening = new Set<ConnectionState>();
  readonly live = new Set<ConnectionState>();
  /** Per address: when it was last logged, and refusals since. */
  private readonly refusals = new Map<string, { atMs: number; since: number }>();

  constructor(
    private readonly config: ClientApiConfig,
    private readonly log: Logger,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Admit a freshly accepted socket (returns its state) or destroy it (returns undefined). */
  admit(socket: net.Socket): ConnectionState | undefined {
    const address = socket.remoteAddress;
    if (address === undefined) {
      // Already gone (reset between accept and here).
      socket.destroy();
      return undefined;
    }
    const open = this.perAddress.get(address) ?? 0;
    if (open >= this.config.connectionsPerAddressMax) {
      return this.refuse(socket, address, 'connections from this address', open, {
        limit: this.config.connectionsPerAddressMax,
        flag: '--max-connections-per-address',
      });
    }
    if (this.opening.size >= this.config.openingConnectionsMax) {
      return this.refuse(socket, address, 'connections still opening', this.opening.size, {
        limit: this.config.openingConnectionsMax,
        flag: '--max-opening-connections',
      });
    }
    const state = new ConnectionState(socket);
    (socket as { [CONNECTION_STATE]?: ConnectionState })[CONNECTION_STATE] = state;
    this.perAddress.set(address, open + 1);
    this.opening.add(state);
    this.live.add(state);
    socket.once('close', () => {
      this.opening.delete(state);
      this.live.delete(state);
      const n = (this.perAddress.get(address) ?? 1) - 1;
      if (n === 0) this.perAddress.delete(address);
      else this.perAddress.set(address, n);
    });
    return state;
  }

  /** The connection now speaks `protocol`: it no longer counts as opening. */
  identified(state: ConnectionState, protocol: 'grpc' | 'gateway', served: net.Socket): void {
    state.protocol = protocol;
    state.served = served;
    this.opening.delete(state);
  }

  /** Destroy every connection with no call to finish: still opening, or refused (shutdown). */
  destroyIdle(): void {
    for (const s of this.live) if (s.refused || this.opening.has(s)) s.socket.destroy();
  }

  /** Destroy every connection left (shutdown, once every call is answered or aborted). */
  destroyAll(): void {
    for (const s of this.live) s.socket.destroy();
  }

  private refuse(
    socket: net.Socket,
    address: string,
    what: string,
    count: number,
    limit: { readonly limit: number; readonly flag: string },
  ): undefined {
    socket.destroy();
    const now = this.nowMs();
    const seen = this.refusals.get(address);
    if (seen !== undefined && now - seen.atMs < REFUSAL_LOG_INTERVAL_MS) {
      seen.since++;
      return undefined;
    }
    // Forget addresses not refused lately, so the table stays as small as the abuse is recent.
    for (const [a, r] of this.refusals) {
      if (now - r.atMs >= REFUSAL_LOG_INTERVAL_MS) this.refusals.delete(a);
    }
    this.log.warn(
      {
        address,
        count,
        limit: limit.limit,
        flag: limit.flag,
        refusedSinceLastLog: seen?.since ?? 0,
      },
      `client API: connection refused: too many ${what}`,
    );
    this.refusals.set(address, { atMs: now, since: 0 });
    return undefined;
  }
}

// The refusals' texts: each names its limit and flag, so whoever reads it knows what to change.

/** A call refused on a connection over `connectionUnsentBytesMax` (RESOURCE_EXHAUSTED). */
export function connectionUnsentRefusal(bytesMax: number): string {
  return (
    `tenure: this connection holds more than ${bytesMax} bytes of answers its client has not ` +
    'read (--max-connection-unsent-bytes); read them before calling again'
  );
}

/** The cancel_reason of a watch create over `watchesPerConnectionMax`. */
export function watchLimitReason(watchesMax: number): string {
  return (
    `tenure: too many watches on this connection (limit ${watchesMax}, ` +
    '--max-watches-per-connection)'
  );
}

/** A LeaseKeepAlive stream refused over `keepAliveStreamsPerConnectionMax` (RESOURCE_EXHAUSTED). */
export function keepAliveLimitRefusal(streamsMax: number): string {
  return (
    `tenure: too many LeaseKeepAlive streams on this connection (limit ${streamsMax}, ` +
    '--max-lease-keepalive-streams-per-connection)'
  );
}
