// TCP between cluster members. Each node listens on its peer URL; for every peer it keeps one
// outbound connection that carries only its own messages to that peer (so per-link order holds),
// batched: messages queued in one turn of the event loop go out in one write, headed by the
// sender's monotonic clock reading (the receiver keeps the newest one per peer: the forwarder puts
// request deadlines on the leader's clock with it). A connection opens with a hello naming the
// cluster ID and the sender; a node of another cluster is refused.
//
// Loss is acceptable to Raft, so a full queue drops its oldest messages and a broken connection
// reconnects with backoff rather than buffering without bound. And nothing waits longer than
// PEER_WAIT_MAX_MS (etcd's rafthttp bounds a peer write at 5 s): a message queued that long is
// dropped, and a connection whose batches the receiver has not acknowledged for that long is reset
// (RST, so the kernel drops what it still holds instead of retransmitting it after a partition
// heals). The receiver acknowledges what it has read every PEER_ACK_INTERVAL_MS.
//
// With peer TLS (peer-tls.ts) the same protocol runs inside TLS, on the same bounds. A member's
// peer port speaks TLS or it does not, and all members must agree: the first bytes of every
// connection tell a TLS handshake from a plain hello, so that a plain member dialing a TLS one,
// or the reverse, is refused at once and named in the log instead of waiting on bytes that
// never parse. TLS handshake failures (a foreign CA, a plain peer, a timeout) are counted.
import { createServer, isIP, Socket, type Server } from 'node:net';
import * as tls from 'node:tls';
import type { NodeId } from '../core/base/units.js';
import type { Message } from '../core/raft/types.js';
import type { PeerChannel, PeerClockReading, Transport } from '../replica/io.js';
import { decodeMessage, encodeMessage } from './message-codec.js';
import {
  FrameReader,
  frame,
  hello,
  MESSAGES_MAGIC,
  PEER_FRAME_BYTES_MAX,
  PEER_HELLO_BYTES_MAX,
  readHello,
  SNAPSHOT_MAGIC,
  type PeerAddress,
} from './peer-frames.js';
import { SnapshotReceiver, SnapshotSender, type SnapshotEvent } from './peer-snapshots.js';
import {
  allowedCnRefusal,
  dialPeer,
  isTlsError,
  opensTlsHandshake,
  type PeerTls,
} from './peer-tls.js';

export { PEER_FRAME_BYTES_MAX, type PeerAddress } from './peer-frames.js';

/** Messages queued per peer while disconnected or slow; older ones are dropped beyond this. */
export const PEER_QUEUE_MAX = 4096;
/** Reconnect backoff bounds, in milliseconds. */
export const PEER_BACKOFF_MIN_MS = 50;
export const PEER_BACKOFF_MAX_MS = 2000;
/**
 * After an established connection closes, we dial again this soon whether or not there is
 * anything to send, to learn whether the peer is still there: a port that refuses the dial is
 * the evidence that the peer's process is gone ('unreachable', issue 19). Not at once: a killed
 * process's sockets are closed one by one, its listener maybe after the connection we had.
 */
export const PEER_LOSS_PROBE_MS = 10;
/**
 * A message waits about this long at most, from being queued to being read (etcd's
 * ConnWriteTimeout, 5 s; see Outbound.enforceBound for how much past it and when not).
 */
export const PEER_WAIT_MAX_MS = 5000;
/** The receiver acknowledges what it has read at most this often, in ms. */
export const PEER_ACK_INTERVAL_MS = 200;

/** First byte of an application frame; Raft messages start with their type code (1..12). */
const APP_FRAME = 0xfa;
/** First byte of the sender's clock reading that heads every batch. */
const CLOCK_FRAME = 0xfb;
/**
 * First byte of an acknowledgement (receiver to sender): the count of batches read, then the
 * clock reading that headed the newest of them and how long the receiver held it before this
 * acknowledgement (both in ms), from which the sender measures the round trip (etcd's
 * etcd_network_peer_round_trip_time_seconds; etcd probes with HTTP requests, rafthttp/probing
 * _status.go). A sender that reads only the count (9 bytes) ignores the rest.
 */
const ACK_FRAME = 0xfc;
/** An acknowledgement with its echo: kind byte and three float64s. */
const ACK_ECHO_BYTES = 1 + 3 * 8;
/** First byte of a refusal (receiver to sender) with its reason, sent before hanging up. */
const REFUSED_FRAME = 0xfd;
/** How long a refusal waits to be flushed to the sender before the socket is destroyed. */
const REFUSAL_LINGER_MS = 1000;
/** A refusal's reason at most, in bytes: what the sender logs, cut to a line. */
const REFUSAL_REASON_BYTES_MAX = 1024;
/** What the receiver sends back: an acknowledgement (its kind byte and a float64) or a refusal. */
const RECEIVER_FRAME_BYTES_MAX = 1 + REFUSAL_REASON_BYTES_MAX;
/** How long a caller may take to send its hello before the connection is dropped, in ms. */
export const PEER_HELLO_TIMEOUT_MS = 10_000;

export interface PeerTransportOptions {
  /**
   * The cluster this node belongs to. Undefined for a member joining an existing cluster that
   * has not heard from it yet: it adopts the ID of the first member that connects (only the
   * cluster that added it knows its address).
   */
  readonly clusterId: string | undefined;
  /** Told once when a joining member adopts the cluster's ID (to persist it). */
  readonly onClusterId?: (clusterId: string) => void;
  readonly self: NodeId;
  /** Where to listen for peers; 127.0.0.1 unless the operator says otherwise. */
  readonly listen: PeerAddress;
  /** Where peers reach us (the advertised peer URL); defaults to `listen`. */
  readonly advertise?: PeerAddress;
  readonly peers: ReadonlyMap<NodeId, PeerAddress>;
  /** The member's monotonic clock, in ms: stamped on every batch sent and on every one read. */
  readonly nowMs: () => number;
  /** Bounds a message's wait; default PEER_WAIT_MAX_MS (tests shorten it). */
  readonly waitMaxMs?: number;
  /** How long a new connection may take to send its hello; default PEER_HELLO_TIMEOUT_MS. */
  readonly helloTimeoutMs?: number;
  readonly onMessage: (m: Message) => void;
  /** Frames of the node's own request forwarding (forward.ts), not Raft messages. */
  readonly onApp?: (from: NodeId, payload: Uint8Array) => void;
  /** Things worth a log line: refused connections, decode errors, reconnects. */
  readonly onEvent?: (e: PeerEvent) => void;
  /** Serve and dial in TLS (peer-tls.ts); plain TCP without. */
  readonly tls?: PeerTls;
  /** Told of each round trip to a peer measured from its acknowledgements, in ms. */
  readonly onRoundTrip?: (peer: NodeId, ms: number) => void;
  /** Told of each batch read from a peer (its clock frame), at `localMs` (peer-suspicion.ts). */
  readonly onHeard?: (peer: NodeId, localMs: number) => void;
}

export type PeerEvent =
  | { readonly type: 'refused'; readonly reason: string }
  | { readonly type: 'connected'; readonly peer: NodeId }
  | { readonly type: 'disconnected'; readonly peer: NodeId; readonly error?: string }
  | { readonly type: 'dropped'; readonly peer: NodeId; readonly messages: number }
  /** A connection whose batches went unacknowledged past the bound was reset. */
  | { readonly type: 'stalled'; readonly peer: NodeId; readonly messages: number }
  /**
   * Our dial to `peer` was refused (ECONNREFUSED): nothing listens on its peer port, so its
   * process is gone (or restarting). Evidence for an early election (replica.ts,
   * peerUnreachable); a reset, a closed connection or a silent peer is none.
   */
  | { readonly type: 'unreachable'; readonly peer: NodeId }
  /** The peer hung up on us, saying why (a plain dialer at a TLS port is told so). */
  | { readonly type: 'refusedBy'; readonly peer: NodeId; readonly reason: string }
  /**
   * A TLS handshake failed: ours to `peer` (outbound), or a dialer's at `remote` (inbound).
   * `failures` counts every one since the transport started.
   */
  | {
      readonly type: 'tlsFailed';
      readonly direction: 'inbound' | 'outbound';
      readonly peer?: NodeId;
      readonly remote?: string;
      readonly error: string;
      readonly failures: number;
    }
  | SnapshotEvent
  | { readonly type: 'snapshotReceived'; readonly peer: NodeId; readonly bytes: number };

/**
 * What went over the link with one peer since the transport started (etcd's
 * etcd_network_peer_sent_bytes_total, _received_bytes_total, _sent_failures_total): bytes as
 * written to and read from the connections (frames, headers and snapshots included, TLS
 * excluded), and messages that never left (dropped from a full or stale queue, lost with a
 * connection reset, a snapshot that failed).
 */
export interface PeerTraffic {
  sentBytes: number;
  receivedBytes: number;
  sendFailures: number;
  /** An outbound connection is up and said hello. */
  connected: boolean;
}

function newTraffic(): PeerTraffic {
  return { sentBytes: 0, receivedBytes: 0, sendFailures: 0, connected: false };
}

/** A frame of one number: the clock reading heading a batch. */
function numberFrame(kind: typeof CLOCK_FRAME, value: number): Buffer {
  const b = Buffer.allocUnsafe(4 + 9);
  b.writeUInt32LE(9, 0);
  b[4] = kind;
  b.writeDoubleLE(value, 5);
  return b;
}

/** An acknowledgement of `batches`, echoing the newest batch's clock and how long it was held. */
function ackFrame(batches: number, echoedMs: number, heldMs: number): Buffer {
  const b = Buffer.allocUnsafe(4 + ACK_ECHO_BYTES);
  b.writeUInt32LE(ACK_ECHO_BYTES, 0);
  b[4] = ACK_FRAME;
  b.writeDoubleLE(batches, 5);
  b.writeDoubleLE(echoedMs, 13);
  b.writeDoubleLE(heldMs, 21);
  return b;
}

/** A refusal frame: REFUSED_FRAME and the reason in UTF-8, cut to REFUSAL_REASON_BYTES_MAX. */
function refusalFrame(reason: string): Buffer {
  const text = Buffer.from(reason, 'utf8').subarray(0, REFUSAL_REASON_BYTES_MAX);
  return frame(Buffer.concat([Buffer.from([REFUSED_FRAME]), text]));
}

interface Queued {
  readonly bytes: Uint8Array;
  readonly queuedAtMs: number;
}

/** A batch written to the socket and not yet acknowledged by the receiver. */
interface Unacked {
  /** When its oldest message was queued: the bound counts a message's whole wait. */
  readonly queuedAtMs: number;
  readonly messages: number;
}

class Outbound {
  private socket: Socket | undefined;
  /** The TCP connection under `socket` (the same socket without TLS): what a reset cuts. */
  private tcp: Socket | undefined;
  private connected = false;
  private queue: Queued[] = [];
  private flushScheduled = false;
  private backoffMs = PEER_BACKOFF_MIN_MS;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  /** Batches written on this connection, oldest first; acknowledged ones are removed. */
  private unacked: Unacked[] = [];
  private batchesWritten = 0;
  private batchesAcked = 0;
  /** The peer's own connection to us closed: probe its port once ours closes too. */
  private lossProbe = false;

  constructor(
    private readonly peer: NodeId,
    /** Where the next dial goes; MemberUpdate moves it (moveTo). */
    private addr: PeerAddress,
    private readonly hello: () => Buffer,
    private readonly onEvent: (e: PeerEvent) => void,
    private readonly nowMs: () => number,
    private readonly waitMaxMs: number,
    /** The address our side of the connection binds to, if any (outboundAddress). */
    private localAddress: string | undefined,
    private readonly tls: PeerTls | undefined,
    /** Told of each failed TLS handshake (the transport counts them). */
    private readonly tlsFailed: (peer: NodeId, error: string) => void,
    private readonly traffic: PeerTraffic,
    /** Told of each round trip measured from an acknowledgement, in ms. */
    private readonly onRoundTrip: ((peer: NodeId, ms: number) => void) | undefined,
  ) {}

  send(bytes: Uint8Array): void {
    if (this.closed) return;
    this.queue.push({ bytes, queuedAtMs: this.nowMs() });
    if (this.queue.length > PEER_QUEUE_MAX) {
      const drop = this.queue.length - PEER_QUEUE_MAX;
      this.queue.splice(0, drop);
      this.onEvent({ type: 'dropped', peer: this.peer, messages: drop });
    }
    if (!this.socket) this.connect();
    else if (this.connected) this.scheduleFlush();
  }

  /**
   * The connection the peer dialled to us, which had carried its messages, closed. A killed
   * process's sockets all close; ours to it may not have carried anything the peer acknowledged
   * (a follower's link to its leader carries only answers, acknowledged in batches), and then
   * its close alone would not start the loss probe. Dial soon, so that a refused port becomes
   * the evidence that the process is gone (issue 19) on either link.
   */
  peerLost(): void {
    if (this.closed) return;
    if (this.socket !== undefined) {
      this.lossProbe = true;
      return;
    }
    if (this.retry !== undefined) clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect();
    }, PEER_LOSS_PROBE_MS);
  }

  private connect(): void {
    if (this.closed || this.socket) return;
    const { socket: s, tcp, ready } = dialPeer(this.addr, this.localAddress, this.tls);
    this.socket = s;
    this.tcp = tcp;
    // The receiver sends nothing but acknowledgements and, before it hangs up, a refusal.
    const acks = new FrameReader(RECEIVER_FRAME_BYTES_MAX);
    // With TLS: whether TCP connected (a refused or unreachable port is no handshake failure),
    // the bound on the handshake, and why it failed, reported once when the socket closes.
    let tcpUp = false;
    let handshakeTimer: NodeJS.Timeout | undefined;
    let tlsError: string | undefined;
    const tlsOptions = this.tls;
    // ECONNREFUSED comes only from a dial that never connected: the port answered the SYN with
    // a reset (or ICMP said it is closed), so no process listens there.
    let refused = false;
    // Whether the peer acknowledged something on this connection: a working link, not one that
    // accepts and hangs up (those are retried ever less often, by the backoff).
    let acknowledged = false;
    tcp.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED') refused = true;
    });
    if (tlsOptions !== undefined)
      tcp.once('connect', () => {
        tcpUp = true;
        const ms = tlsOptions.handshakeTimeoutMs;
        handshakeTimer = setTimeout(() => {
          tlsError ??= `TLS handshake not done after ${ms} ms`;
          s.destroy();
        }, ms);
      });
    s.on(ready, () => {
      clearTimeout(handshakeTimer);
      this.connected = true;
      this.traffic.connected = true;
      this.unacked = [];
      this.batchesWritten = 0;
      this.batchesAcked = 0;
      s.write(this.hello());
      this.onEvent({ type: 'connected', peer: this.peer });
      this.scheduleFlush();
    });
    s.on('data', (chunk: Buffer) => {
      try {
        acks.push(chunk, (payload) => {
          if (payload[0] === ACK_FRAME && payload.length >= 9) {
            // The backoff starts over once the peer has read something, not at connect: a peer
            // that accepts and hangs up (a refused hello, a TLS 1.3 server refusing our
            // certificate after our side of the handshake is done) is retried ever less often.
            this.backoffMs = PEER_BACKOFF_MIN_MS;
            acknowledged = true;
            this.acked(payload.readDoubleLE(1));
            if (payload.length >= ACK_ECHO_BYTES && this.onRoundTrip !== undefined) {
              const heldMs = payload.readDoubleLE(17);
              const ms = this.nowMs() - payload.readDoubleLE(9) - heldMs;
              if (ms >= 0 && heldMs >= 0) this.onRoundTrip(this.peer, ms);
            }
          } else if (payload[0] === REFUSED_FRAME)
            this.onEvent({
              type: 'refusedBy',
              peer: this.peer,
              reason: payload.subarray(1).toString('utf8'),
            });
        });
      } catch {
        s.destroy();
      }
    });
    // 'close' follows an error and handles it; a TLS error is kept for its report.
    s.on('error', (e: Error) => {
      if (tlsOptions !== undefined && tcpUp && (!this.connected || isTlsError(e)))
        tlsError ??= e.message;
    });
    if (tcp !== s) tcp.on('error', () => undefined);
    s.on('close', (hadError) => {
      clearTimeout(handshakeTimer);
      const wasConnected = this.connected;
      if (tlsOptions !== undefined && tcpUp && !wasConnected)
        tlsError ??= 'the connection closed during the TLS handshake';
      if (tlsError !== undefined) this.tlsFailed(this.peer, tlsError);
      this.socket = undefined;
      this.tcp = undefined;
      this.connected = false;
      this.traffic.connected = false;
      this.unacked = [];
      if (wasConnected)
        this.onEvent({
          type: 'disconnected',
          peer: this.peer,
          ...(hadError ? { error: 'socket error' } : {}),
        });
      if (this.closed) return;
      if (refused && !wasConnected) this.onEvent({ type: 'unreachable', peer: this.peer });
      // Reconnect only when there is something to say (Raft's heartbeats keep the link busy),
      // or once soon after losing a working connection, to learn whether the peer is gone.
      const probe = acknowledged || this.lossProbe;
      this.lossProbe = false;
      this.retry = setTimeout(
        () => {
          this.retry = undefined;
          if (this.queue.length > 0 || probe) this.connect();
        },
        probe ? PEER_LOSS_PROBE_MS : this.backoffMs,
      );
      this.backoffMs = Math.min(PEER_BACKOFF_MAX_MS, this.backoffMs * 2);
    });
  }

  private acked(batches: number): void {
    while (this.batchesAcked < batches && this.unacked.length > 0) {
      this.unacked.shift();
      this.batchesAcked++;
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** One write for everything queued (etcd's batching), headed by our clock reading. */
  flush(): void {
    if (!this.connected || !this.socket || this.queue.length === 0) return;
    const now = this.nowMs();
    const fresh = this.queue.filter((q) => now - q.queuedAtMs < this.waitMaxMs);
    const stale = this.queue.length - fresh.length;
    this.queue = [];
    if (stale > 0) this.onEvent({ type: 'dropped', peer: this.peer, messages: stale });
    if (fresh.length === 0) return;
    const frames = [numberFrame(CLOCK_FRAME, now), ...fresh.map((q) => frame(q.bytes))];
    const batch = Buffer.concat(frames);
    this.traffic.sentBytes += batch.length;
    this.socket.write(batch);
    this.batchesWritten++;
    this.unacked.push({ queuedAtMs: (fresh[0] as Queued).queuedAtMs, messages: fresh.length });
  }

  /**
   * The bound on a message's wait, from when it was queued: queued messages older than it are
   * dropped, and a connection holding an unacknowledged one that old is reset, so that neither
   * this side nor the kernel delivers it later (after a partition heals, TCP would). Checked
   * every tenth of the bound, so a message may be read up to that much past it; and a sender
   * that is stopped resets nothing, so the kernel may still deliver what it had written.
   * Nothing that must be safe rests on this: a forwarded request carries its own deadline.
   */
  enforceBound(): void {
    const now = this.nowMs();
    const oldest = this.unacked[0];
    if (this.socket && oldest && now - oldest.queuedAtMs >= this.waitMaxMs) {
      const lost = this.unacked.reduce((n, u) => n + u.messages, 0);
      this.unacked = [];
      this.onEvent({ type: 'stalled', peer: this.peer, messages: lost });
      // The TCP connection itself, under TLS too: a TLS socket cannot send a reset.
      (this.tcp ?? this.socket).resetAndDestroy();
    }
    const before = this.queue.length;
    this.queue = this.queue.filter((q) => now - q.queuedAtMs < this.waitMaxMs);
    if (this.queue.length < before)
      this.onEvent({ type: 'dropped', peer: this.peer, messages: before - this.queue.length });
  }

  /**
   * Dial `addr` from now on (MemberUpdate gave the peer new peer URLs). A connection that is up
   * stays until it breaks: the member runs where it was until it is restarted at the new
   * address, and what goes over that connection meanwhile (appends, the commit of the update
   * itself, the answer to a request it forwarded) must still reach it. etcd does the same:
   * UpdatePeer only changes the URLs its next dials pick (rafthttp/peer.go update,
   * urlpick.go), its streams stay. A pending redial goes to the new address at once, with the
   * backoff earned at the old one forgotten.
   */
  moveTo(addr: PeerAddress, localAddress: string | undefined): void {
    this.addr = addr;
    this.localAddress = localAddress;
    if (this.closed || this.socket !== undefined || this.retry === undefined) return;
    clearTimeout(this.retry);
    this.retry = undefined;
    this.backoffMs = PEER_BACKOFF_MIN_MS;
    if (this.queue.length > 0) this.connect();
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.socket?.destroy();
    this.tcp?.destroy();
    this.queue = [];
  }
}

export class PeerTransport implements Transport {
  private readonly server: Server;
  /** With TLS: the TLS side of the listener, handed each connection that opens a handshake. */
  private readonly tlsServer: tls.Server | undefined;
  private tlsFailures = 0;
  private readonly outbound = new Map<NodeId, Outbound>();
  private readonly inbound = new Set<Socket>();
  /** Per peer, since the transport started; kept after a peer is removed (counters). */
  private readonly traffic = new Map<NodeId, PeerTraffic>();
  private readonly onEvent: (e: PeerEvent) => void;
  private clusterId: string | undefined;
  private readonly waitMaxMs: number;
  /**
   * The newest clock reading each peer sent, with our clock when it arrived, read on the peer's
   * latest connection only: a restarted peer's clock starts anew, and a reading of its earlier
   * process says nothing of the new one. Within one connection readings arrive in order.
   */
  private readonly clocks = new Map<NodeId, PeerClockReading>();
  private readonly latest = new Map<NodeId, Socket>();
  private readonly boundTimer: NodeJS.Timeout;
  /** The hello that opens a connection carrying `magic`'s kind (messages or one snapshot). */
  private hello(magic: number): Buffer {
    return hello(
      magic,
      this.clusterId ?? '',
      this.opts.self,
      this.opts.advertise ?? this.opts.listen,
    );
  }
  private readonly helloFrame = (): Buffer => this.hello(MESSAGES_MAGIC);
  /** Where each peer is reached, for the snapshot connections. */
  private readonly addresses = new Map<NodeId, PeerAddress>();
  private readonly snapshots: SnapshotSender;

  private constructor(private readonly opts: PeerTransportOptions) {
    const told = opts.onEvent ?? (() => undefined);
    this.onEvent = (e) => {
      this.count(e);
      told(e);
    };
    this.snapshots = new SnapshotSender(
      () => this.hello(SNAPSHOT_MAGIC),
      this.onEvent,
      opts.tls,
      (peer, error) => this.tlsFailed('outbound', error, { peer }),
    );
    const peerTls = opts.tls;
    if (peerTls === undefined) {
      this.tlsServer = undefined;
      this.server = createServer((s) => this.accept(s));
    } else {
      this.tlsServer = tls.createServer(
        { ...peerTls.server, handshakeTimeout: peerTls.handshakeTimeoutMs },
        (s) => {
          // A peer with a foreign CA's certificate, none, or one past its dates: refused here,
          // before anything it sent is read (peer-tls.ts says why not by Node); also one whose CN is
          // not --peer-cert-allowed-cn.
          const refusal =
            peerTls.verifyPeers && !s.authorized
              ? `peer certificate refused: ${String(s.authorizationError ?? 'none')}`
              : allowedCnRefusal(peerTls, s);
          if (refusal !== undefined) {
            const why = refusal;
            this.tlsFailed('inbound', why, remoteOf(s));
            s.on('error', () => undefined);
            // Told inside TLS: in TLS 1.3 its side of the handshake is done, and a bare hang-up
            // would leave it guessing.
            s.end(refusalFrame(why));
            setTimeout(() => s.destroy(), REFUSAL_LINGER_MS).unref();
            return;
          }
          this.accept(s);
        },
      );
      // A handshake that failed or timed out (the socket may be gone: no address then).
      this.tlsServer.on('tlsClientError', (err: Error, s: tls.TLSSocket) =>
        this.tlsFailed('inbound', err.message, remoteOf(s)),
      );
      this.server = createServer((s) => this.sniffTls(s, peerTls));
    }
    this.clusterId = opts.clusterId;
    this.waitMaxMs = opts.waitMaxMs ?? PEER_WAIT_MAX_MS;
    for (const [id, addr] of opts.peers) if (id !== opts.self) this.addPeer(id, addr);
    // A tenth of the bound: a stalled connection is reset at most 10 % late.
    this.boundTimer = setInterval(
      () => {
        for (const o of this.outbound.values()) o.enforceBound();
      },
      Math.max(10, this.waitMaxMs / 10),
    );
    this.boundTimer.unref();
  }

  heard(peer: NodeId): PeerClockReading | undefined {
    return this.clocks.get(peer);
  }

  /** What went over each peer's link so far (read by /metrics). */
  peerTraffic(): ReadonlyMap<NodeId, PeerTraffic> {
    return this.traffic;
  }

  private trafficOf(peer: NodeId): PeerTraffic {
    let t = this.traffic.get(peer);
    if (t === undefined) {
      t = newTraffic();
      this.traffic.set(peer, t);
    }
    return t;
  }

  /** Messages that never left, and snapshot bytes, from the events that report them. */
  private count(e: PeerEvent): void {
    if (e.type === 'dropped' || e.type === 'stalled')
      this.trafficOf(e.peer).sendFailures += e.messages;
    else if (e.type === 'snapshotFailed') this.trafficOf(e.peer).sendFailures++;
    else if (e.type === 'snapshotSent') this.trafficOf(e.peer).sentBytes += e.bytes;
  }

  /** TLS handshakes that failed since the transport started, either side. */
  get tlsHandshakeFailures(): number {
    return this.tlsFailures;
  }

  private tlsFailed(
    direction: 'inbound' | 'outbound',
    error: string,
    who: { readonly peer?: NodeId; readonly remote?: string },
  ): void {
    this.tlsFailures++;
    this.onEvent({ type: 'tlsFailed', direction, ...who, error, failures: this.tlsFailures });
  }

  /**
   * A connection to the TLS listener: its first bytes must open a TLS handshake, which the TLS
   * server then takes over (with the bytes put back). A plain-text peer is told why it is
   * refused, in a frame it can read, and counted as a failed handshake.
   */
  private sniffTls(s: Socket, peerTls: PeerTls): void {
    this.inbound.add(s);
    s.setNoDelay(true);
    s.on('error', () => undefined);
    s.on('close', () => this.inbound.delete(s));
    const remote = remoteOf(s);
    const timer = setTimeout(() => {
      this.tlsFailed('inbound', `nothing sent within ${peerTls.handshakeTimeoutMs} ms`, remote);
      s.destroy();
    }, peerTls.handshakeTimeoutMs);
    timer.unref();
    s.once('data', (first: Buffer) => {
      clearTimeout(timer);
      s.pause();
      if (!opensTlsHandshake(first)) {
        this.tlsFailed(
          'inbound',
          'a plain-text peer dialed this TLS peer port: every member must use https:// ' +
            'peer URLs, or none',
          remote,
        );
        s.end(
          refusalFrame(
            `this member's peer port serves TLS: the cluster's peer URLs are https://, ` +
              `this member's must be too`,
          ),
        );
        setTimeout(() => s.destroy(), REFUSAL_LINGER_MS).unref();
        return;
      }
      s.unshift(first);
      this.tlsServer?.emit('connection', s);
    });
  }

  /** Listen on the peer address and return the transport; port 0 picks a free port. */
  static async start(opts: PeerTransportOptions): Promise<PeerTransport> {
    const t = new PeerTransport(opts);
    await new Promise<void>((resolve, reject) => {
      t.server.once('error', reject);
      t.server.listen(opts.listen.port, opts.listen.host, () => resolve());
    });
    return t;
  }

  get port(): number {
    const a = this.server.address();
    return typeof a === 'object' && a !== null ? a.port : 0;
  }

  flush(): void {
    for (const out of this.outbound.values()) out.flush();
  }

  send(m: Message): void {
    if (m.type === 'snap') {
      const addr = this.addresses.get(m.to);
      if (addr !== undefined)
        this.snapshots.send(
          m.to,
          addr,
          outboundAddress(this.opts.listen.host, addr.host),
          encodeMessage(m),
        );
      return;
    }
    this.outbound.get(m.to)?.send(encodeMessage(m));
  }

  /** The forwarding frames' channel over the same connections. */
  readonly channel: PeerChannel = {
    send: (to, frame) => this.sendApp(to, frame),
    heard: (peer) => this.heard(peer),
  };

  /** Best effort, like Raft messages: the forwarding layer has its own deadlines. */
  sendApp(to: NodeId, payload: Uint8Array): void {
    const out = this.outbound.get(to);
    if (!out) return;
    const b = new Uint8Array(payload.length + 1);
    b[0] = APP_FRAME;
    b.set(payload, 1);
    out.send(b);
  }

  /**
   * A member added at run time (MemberAdd). A known one keeps its connection; if `addr` is not
   * where we reach it (MemberUpdate gave it new peer URLs), the next dial goes there, but the
   * connection that is up stays until it breaks (Outbound.moveTo says why). Tearing it down at
   * once lost what the member still needed from its old address: the leader's answer to the
   * MemberUpdate the member itself had forwarded, so the client timed out.
   */
  addPeer(id: NodeId, addr: PeerAddress): void {
    if (id === this.opts.self) return;
    const known = this.addresses.get(id);
    if (known !== undefined && known.host === addr.host && known.port === addr.port) return;
    const local = outboundAddress(this.opts.listen.host, addr.host);
    this.addresses.set(id, addr);
    const out = this.outbound.get(id);
    if (out !== undefined) {
      out.moveTo(addr, local);
      return;
    }
    this.outbound.set(
      id,
      new Outbound(
        id,
        addr,
        this.helloFrame,
        this.onEvent,
        this.opts.nowMs,
        this.waitMaxMs,
        local,
        this.opts.tls,
        (peer, error) => this.tlsFailed('outbound', error, { peer }),
        this.trafficOf(id),
        this.opts.onRoundTrip,
      ),
    );
  }

  removePeer(id: NodeId): void {
    this.outbound.get(id)?.close();
    this.outbound.delete(id);
    this.addresses.delete(id);
  }

  private accept(s: Socket): void {
    this.inbound.add(s);
    s.setNoDelay(true);
    // Until the hello has named a member of our cluster, a frame is at most a hello long, and
    // the caller has PEER_HELLO_TIMEOUT_MS to send it.
    const reader = new FrameReader(PEER_HELLO_BYTES_MAX);
    const helloTimeoutMs = this.opts.helloTimeoutMs ?? PEER_HELLO_TIMEOUT_MS;
    s.setTimeout(helloTimeoutMs, () => {
      if (from === undefined) refuse(`no hello within ${helloTimeoutMs} ms`);
    });
    let from: NodeId | undefined;
    /** Set once the hello says this connection carries a snapshot. */
    let snapshot: SnapshotReceiver | undefined;
    let batchesRead = 0;
    /** The newest batch's clock reading, and our clock when it was read (the ack's echo). */
    let echoMs = 0;
    let echoReadAtMs = 0;
    let ackTimer: NodeJS.Timeout | undefined;
    const scheduleAck = (): void => {
      if (ackTimer) return;
      ackTimer = setTimeout(() => {
        ackTimer = undefined;
        const heldMs = this.opts.nowMs() - echoReadAtMs;
        if (!s.destroyed) s.write(ackFrame(batchesRead, echoMs, heldMs));
      }, PEER_ACK_INTERVAL_MS);
      ackTimer.unref();
    };
    let received: PeerTraffic | undefined;
    const refuse = (reason: string): void => {
      this.onEvent({ type: 'refused', reason });
      s.destroy();
    };
    let first = true;
    s.on('data', (chunk: Buffer) => {
      if (first && this.opts.tls === undefined && opensTlsHandshake(chunk))
        return refuse(
          `a TLS peer at ${remoteOf(s).remote ?? '?'} dialed this plain-text peer port: ` +
            'every member must use http:// peer URLs, or https:// with the peer TLS flags',
        );
      first = false;
      if (received !== undefined) received.receivedBytes += chunk.length;
      try {
        reader.push(chunk, (payload) => {
          if (from === undefined) {
            const h = readHello(payload);
            if (h === undefined) return refuse('not a tenure peer');
            const { sender, clusterId, reachAt } = h;
            // A joining member's first caller is the cluster that added it (nobody else knows
            // its address yet): it takes that cluster's ID.
            if (this.clusterId === undefined && clusterId !== '') {
              this.clusterId = clusterId;
              this.opts.onClusterId?.(clusterId);
            }
            if (clusterId !== this.clusterId) {
              return refuse(
                `peer ${sender} belongs to cluster '${clusterId}', not '${this.clusterId ?? '(not joined yet)'}'`,
              );
            }
            from = sender;
            // The chunk that carried the hello counts too (the bytes after it are this peer's).
            received = this.trafficOf(sender);
            received.receivedBytes += chunk.length;
            s.setTimeout(0);
            reader.limit(PEER_FRAME_BYTES_MAX);
            if (h.magic === SNAPSHOT_MAGIC) {
              snapshot = new SnapshotReceiver();
              return;
            }
            this.latest.set(sender, s);
            this.clocks.delete(sender);
            // A sender we have no route to (we are joining, or it joined after us): answer it
            // where it says it is.
            if (reachAt && !this.outbound.has(sender)) this.addPeer(sender, reachAt);
            return;
          }
          if (snapshot !== undefined) {
            const whole = snapshot.frame(payload);
            if (whole === undefined) return;
            const m = decodeMessage(whole);
            if (m.type !== 'snap' || m.from !== from || m.to !== this.opts.self)
              return refuse(`a ${m.type} ${m.from}->${m.to} on a snapshot link from ${from}`);
            this.onEvent({ type: 'snapshotReceived', peer: from, bytes: whole.length });
            s.end();
            this.opts.onMessage(m);
            return;
          }
          if (payload[0] === CLOCK_FRAME && payload.length >= 9) {
            const peerMs = payload.readDoubleLE(1);
            const localMs = this.opts.nowMs();
            if (this.latest.get(from) === s) {
              this.clocks.set(from, { peerMs, localMs });
              this.opts.onHeard?.(from, localMs);
            }
            echoMs = peerMs;
            echoReadAtMs = localMs;
            batchesRead++;
            scheduleAck();
            return;
          }
          if (payload[0] === APP_FRAME) {
            this.opts.onApp?.(from, payload.subarray(1));
            return;
          }
          const m = decodeMessage(payload);
          if (m.from !== from || m.to !== this.opts.self)
            return refuse(`message ${m.from}->${m.to} on the link from ${from}`);
          this.opts.onMessage(m);
        });
      } catch (e) {
        refuse(e instanceof Error ? e.message : String(e));
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      this.inbound.delete(s);
      if (ackTimer) clearTimeout(ackTimer);
      if (from !== undefined && this.latest.get(from) === s) {
        this.latest.delete(from);
        this.outbound.get(from)?.peerLost();
      }
    });
  }

  async close(): Promise<void> {
    clearInterval(this.boundTimer);
    this.snapshots.close();
    for (const o of this.outbound.values()) o.close();
    for (const s of this.inbound) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The address a connection to `peerHost` leaves from: the member's own peer listen address when
 * that is one address (not the wildcard) of the same family and scope as the peer's, so that a
 * multi-homed host talks to its peers from the address they know it by, and a rule that names a
 * member's address (a firewall, iptables in a test's network namespace) sees its traffic as its
 * own. Otherwise the kernel chooses, as it does for etcd's peers.
 */
export function outboundAddress(listenHost: string, peerHost: string): string | undefined {
  const family = isIP(listenHost);
  if (family === 0 || family !== isIP(peerHost)) return undefined;
  if (listenHost === '0.0.0.0' || listenHost === '::') return undefined;
  return isLoopback(listenHost) === isLoopback(peerHost) ? listenHost : undefined;
}

/** `{ remote: 'address:port' }` of a socket, or nothing once its handle is gone. */
function remoteOf(s: Socket): { readonly remote?: string } {
  return s.remoteAddress === undefined ? {} : { remote: `${s.remoteAddress}:${s.remotePort}` };
}

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}
