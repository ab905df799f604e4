// Snapshots between members travel on connections of their own, one snapshot per connection,
// in chunks written as fast as the socket drains. A snapshot is the whole store (up to the 2 GiB
// quota and beyond), so it cannot be one frame of the message connection: it would pass the
// frame limit, hold up the heartbeats and appends queued behind it for as long as it takes to
// send, and be cut by their 5 s bound. etcd's rafthttp sends a snapshot as an HTTP request of
// its own for the same reasons (etcd server/etcdserver/api/rafthttp/snapshot_sender.go).
//
// The connection: the hello (SNAPSHOT_MAGIC), a BEGIN frame with the encoded message's length,
// then CHUNK frames until that many bytes have come; the receiver decodes the message once all
// of it is there and closes the connection. A connection that breaks loses the snapshot; the
// leader sends it again (Raft's snapshot progress re-sends one that is never acknowledged).
// With peer TLS the connection is dialed as the message connections are (peer-tls.ts).
import { constants as bufferConstants } from 'node:buffer';
import type { Socket } from 'node:net';
import type { NodeId } from '../core/base/units.js';
import { frame, frameHead, PeerFrameError, type PeerAddress } from './peer-frames.js';
import { dialPeer, type PeerTls } from './peer-tls.js';

/** Bytes of a snapshot per CHUNK frame. */
export const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;
/** A snapshot a member accepts at most: the largest buffer Node can allocate. */
export const SNAPSHOT_BYTES_MAX = bufferConstants.MAX_LENGTH;

const BEGIN_FRAME = 0xf1;
const CHUNK_FRAME = 0xf2;

export type SnapshotEvent =
  | { readonly type: 'snapshotSent'; readonly peer: NodeId; readonly bytes: number }
  | { readonly type: 'snapshotFailed'; readonly peer: NodeId; readonly error: string }
  | { readonly type: 'snapshotBusy'; readonly peer: NodeId };

/** The sending side: at most one snapshot in flight per peer. */
export class SnapshotSender {
  private readonly sockets = new Map<NodeId, Socket>();

  constructor(
    private readonly hello: () => Buffer,
    private readonly onEvent: (e: SnapshotEvent) => void,
    private readonly tls?: PeerTls,
    /** Told of a TLS handshake that failed (the transport counts them). */
    private readonly tlsFailed: (peer: NodeId, error: string) => void = () => undefined,
  ) {}

  /** Send `message` (an encoded snap message) to `peer`; dropped if one is still going there. */
  send(
    peer: NodeId,
    addr: PeerAddress,
    localAddress: string | undefined,
    message: Uint8Array,
  ): void {
    if (this.sockets.has(peer)) {
      this.onEvent({ type: 'snapshotBusy', peer });
      return;
    }
    const { socket: s, tcp, ready } = dialPeer(addr, localAddress, this.tls);
    this.sockets.set(peer, s);
    let failed: string | undefined;
    let secured = this.tls === undefined;
    let tcpUp = false;
    let handshakeTimer: NodeJS.Timeout | undefined;
    const tlsOptions = this.tls;
    if (tlsOptions !== undefined) {
      tcp.on('error', () => undefined); // the TLS socket reports it
      tcp.once('connect', () => {
        tcpUp = true;
        handshakeTimer = setTimeout(() => {
          failed ??= `TLS handshake not done after ${tlsOptions.handshakeTimeoutMs} ms`;
          s.destroy();
        }, tlsOptions.handshakeTimeoutMs);
      });
    }
    s.on('error', (e) => (failed ??= e.message));
    s.on('close', () => {
      clearTimeout(handshakeTimer);
      if (this.sockets.get(peer) === s) this.sockets.delete(peer);
      if (failed !== undefined) {
        if (!secured && tcpUp) this.tlsFailed(peer, failed);
        this.onEvent({ type: 'snapshotFailed', peer, error: failed });
      }
    });
    s.once(ready, () => {
      secured = true;
      clearTimeout(handshakeTimer);
      this.stream(s, message).then(
        () => this.onEvent({ type: 'snapshotSent', peer, bytes: message.length }),
        (e: unknown) => {
          failed ??= e instanceof Error ? e.message : String(e);
          s.destroy();
        },
      );
    });
  }

  private async stream(s: Socket, message: Uint8Array): Promise<void> {
    const begin = Buffer.allocUnsafe(9);
    begin[0] = BEGIN_FRAME;
    begin.writeDoubleLE(message.length, 1);
    s.write(this.hello());
    s.write(frame(begin));
    const kind = Buffer.from([CHUNK_FRAME]);
    for (let at = 0; at < message.length; at += SNAPSHOT_CHUNK_BYTES) {
      if (s.destroyed) throw new Error('connection closed while sending');
      const chunk = message.subarray(at, Math.min(message.length, at + SNAPSHOT_CHUNK_BYTES));
      s.write(frameHead(1 + chunk.length));
      s.write(kind);
      // Flow control: the next chunk waits until the kernel has taken this one.
      if (!s.write(chunk)) await drained(s);
    }
    s.end();
  }

  /** Abandon every snapshot in flight. */
  close(): void {
    for (const s of this.sockets.values()) s.destroy();
    this.sockets.clear();
  }
}

/** Resolves when `s` has taken what was written (or closed: the next write then fails). */
function drained(s: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      s.off('drain', done);
      s.off('close', done);
      resolve();
    };
    s.on('drain', done);
    s.on('close', done);
  });
}

/** The receiving side of one snapshot connection, fed the frames after its hello. */
export class SnapshotReceiver {
  /** The length the BEGIN frame announced. */
  private total: number | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private filled = 0;

  /**
   * Bytes held for the snapshot so far. The buffer grows with what arrives (doubling, capped at
   * the announced length), never to the announced length at once: a BEGIN frame is 9 bytes, and
   * one claiming 2 GiB must not make the member allocate 2 GiB for a peer that sends no more.
   */
  get bufferedBytes(): number {
    return this.buf.length;
  }

  /**
   * Take one frame. Returns the whole encoded message once its last chunk is in, or undefined;
   * throws PeerFrameError on a frame out of place or a snapshot larger than SNAPSHOT_BYTES_MAX.
   */
  frame(payload: Buffer): Buffer | undefined {
    if (payload[0] === BEGIN_FRAME && payload.length >= 9) {
      if (this.total !== undefined) throw new PeerFrameError('snapshot stream began twice');
      const total = payload.readDoubleLE(1);
      if (!Number.isSafeInteger(total) || total <= 0 || total > SNAPSHOT_BYTES_MAX)
        throw new PeerFrameError(`snapshot of ${total} bytes refused`);
      this.total = total;
      return undefined;
    }
    if (payload[0] !== CHUNK_FRAME || this.total === undefined)
      throw new PeerFrameError('snapshot stream: unexpected frame');
    const chunk = payload.subarray(1);
    if (this.filled + chunk.length > this.total)
      throw new PeerFrameError('snapshot stream: more bytes than announced');
    this.reserve(this.filled + chunk.length);
    this.buf.set(chunk, this.filled);
    this.filled += chunk.length;
    if (this.filled < this.total) return undefined;
    return this.buf.length === this.filled ? this.buf : this.buf.subarray(0, this.filled);
  }

  /** Room for `bytes`: at least double the buffer (so copies cost O(total)), at most the total. */
  private reserve(bytes: number): void {
    if (bytes <= this.buf.length) return;
    const total = this.total as number;
    const size = Math.min(total, Math.max(bytes, 2 * this.buf.length, SNAPSHOT_CHUNK_BYTES));
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.filled);
    this.buf = next;
  }
}
