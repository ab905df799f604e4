// The framing of the peer connections (peer-transport.ts, peer-snapshots.ts): every frame is a
// u32 length and its payload, and every connection opens with a hello naming the sender, its
// cluster and where it is reached, behind a magic number that also says what the connection
// carries (messages, or one snapshot).
import type { NodeId } from '../core/base/units.js';

/** A frame's payload at most. Snapshots are larger, and travel in chunks (peer-snapshots.ts). */
export const PEER_FRAME_BYTES_MAX = 64 * 1024 * 1024;
/**
 * The first frame's payload at most, before the hello says who is calling: a hello is 20 bytes
 * plus the cluster ID and the host (each at most 2^16-1 bytes by their u16 lengths). Without
 * this bound anyone who reaches the peer port could make it wait for, and hold, 64 MiB per
 * connection before it has checked anything.
 */
export const PEER_HELLO_BYTES_MAX = 4 + 8 + 2 * 3 + 2 * 0xffff;

/** Bytes on a peer connection that are not what the framing allows. */
export class PeerFrameError extends Error {
  override readonly name = 'PeerFrameError';
  readonly code = 'BAD_PEER_FRAME';
}

/** A connection that carries messages, acknowledgements and forwarding frames. */
export const MESSAGES_MAGIC = 0x544e5231; // "TNR1"
/** A connection that carries one snapshot, in chunks. */
export const SNAPSHOT_MAGIC = 0x544e5253; // "TNRS"

/** Where a member is reached by its peers. */
export interface PeerAddress {
  readonly host: string;
  readonly port: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function frame(payload: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(4 + payload.length);
  b.writeUInt32LE(payload.length, 0);
  b.set(payload, 4);
  return b;
}

/** A frame's length prefix alone, for a payload written after it without a copy. */
export function frameHead(payloadBytes: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(payloadBytes, 0);
  return b;
}

/**
 * The hello: magic, sender ID, cluster ID, and the address the sender is reached at, so that a
 * member that does not know the sender yet (one that is joining) can answer it.
 */
export function hello(
  magic: number,
  clusterId: string,
  self: NodeId,
  reachAt: PeerAddress,
): Buffer {
  const id = encoder.encode(clusterId);
  const host = encoder.encode(reachAt.host);
  const b = Buffer.allocUnsafe(4 + 8 + 2 + id.length + 2 + host.length + 2);
  b.writeUInt32LE(magic, 0);
  b.writeDoubleLE(self, 4);
  b.writeUInt16LE(id.length, 12);
  b.set(id, 14);
  let o = 14 + id.length;
  b.writeUInt16LE(host.length, o);
  b.set(host, o + 2);
  o += 2 + host.length;
  b.writeUInt16LE(reachAt.port, o);
  return frame(b);
}

export interface Hello {
  readonly magic: number;
  readonly sender: NodeId;
  readonly clusterId: string;
  readonly reachAt: PeerAddress | undefined;
}

/**
 * The hello in a connection's first frame, or undefined if it is not one (another protocol on
 * the port, or a hello whose sender is not a member ID or whose cluster ID runs past the frame).
 */
export function readHello(payload: Buffer): Hello | undefined {
  if (payload.length < 14) return undefined;
  const magic = payload.readUInt32LE(0);
  if (magic !== MESSAGES_MAGIC && magic !== SNAPSHOT_MAGIC) return undefined;
  const sender = payload.readDoubleLE(4);
  // Member IDs are positive integers below 2^48 (member-id.ts); NaN or 0 would pass for "no
  // sender" in the maps the transport keys by it.
  if (!Number.isSafeInteger(sender) || sender <= 0) return undefined;
  const len = payload.readUInt16LE(12);
  if (payload.length < 14 + len) return undefined;
  const clusterId = decoder.decode(payload.subarray(14, 14 + len));
  return {
    magic,
    sender: sender as NodeId,
    clusterId,
    reachAt: helloAddress(payload, 14 + len),
  };
}

function helloAddress(payload: Buffer, idEnd: number): PeerAddress | undefined {
  if (payload.length < idEnd + 2) return undefined;
  const hostLen = payload.readUInt16LE(idEnd);
  if (payload.length < idEnd + 2 + hostLen + 2) return undefined;
  const host = decoder.decode(payload.subarray(idEnd + 2, idEnd + 2 + hostLen));
  const port = payload.readUInt16LE(idEnd + 2 + hostLen);
  return host !== '' && port > 0 ? { host, port } : undefined;
}

/**
 * Splits a byte stream into length-prefixed frames. Chunks are kept as they arrive and joined
 * once per frame, when all of it is there: joining at every read would copy a frame's bytes
 * again for each read it spans.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private have = 0;

  /** `maxBytes` bounds a frame's payload; `limit` may lower it later (after the hello). */
  constructor(private maxBytes = PEER_FRAME_BYTES_MAX) {}

  /** Frames from now on may be up to `maxBytes` long. */
  limit(maxBytes: number): void {
    this.maxBytes = maxBytes;
  }

  /**
   * Take a chunk of the stream; `onFrame` gets every frame it completes. Throws PeerFrameError
   * once a length prefix is over the bound, before waiting for (or buffering) its payload.
   */
  push(chunk: Buffer, onFrame: (payload: Buffer) => void): void {
    this.chunks.push(chunk);
    this.have += chunk.length;
    for (;;) {
      if (this.have < 4) return;
      const len = this.lengthPrefix();
      if (len > this.maxBytes)
        throw new PeerFrameError(
          `peer frame of ${len} bytes exceeds the limit of ${this.maxBytes}`,
        );
      if (this.have < 4 + len) return;
      const all =
        this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
      const rest = all.subarray(4 + len);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.have = rest.length;
      onFrame(all.subarray(4, 4 + len));
    }
  }

  private lengthPrefix(): number {
    const first = this.chunks[0] as Buffer;
    if (first.length >= 4) return first.readUInt32LE(0);
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined.readUInt32LE(0);
  }
}
