// gRPC's framing over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md): each message is a 1-byte compressed
// flag, a 4-byte big-endian length and the protobuf bytes; deadlines travel as `grpc-timeout`;
// status text as a percent-encoded `grpc-message`. Pure functions and one incremental reader,
// so they are tested without a socket.
import { gunzipSync, inflateSync } from 'node:zlib';
import { GrpcStatus } from './grpc-codes.js';

/** Bytes before each message: compressed flag (1) and length (4). */
export const MESSAGE_HEADER_BYTES = 5;

/** A protocol-level failure of one call, answered with this gRPC status. */
export class GrpcWireError extends Error {
  override readonly name = 'GrpcWireError';
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
  }
}

/** `body` with its 5-byte message header, as one buffer ready for the HTTP/2 stream. */
export function frameMessage(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(MESSAGE_HEADER_BYTES + body.length);
  out[0] = 0;
  out.writeUInt32BE(body.length, 1);
  out.set(body, MESSAGE_HEADER_BYTES);
  return out;
}

/**
 * Splits a stream's DATA into messages. `push` returns the messages completed by a chunk; a
 * message over `maxBytes` or compressed with an encoding we do not have throws GrpcWireError
 * (gRPC's RESOURCE_EXHAUSTED and UNIMPLEMENTED, with grpc-js's texts).
 */
export class MessageReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly maxBytes: number,
    /** The call's `grpc-encoding`, for messages whose compressed flag is set. */
    private readonly encoding: string | undefined,
  ) {}

  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const out: Buffer[] = [];
    for (;;) {
      if (this.pendingBytes < MESSAGE_HEADER_BYTES) return out;
      if ((this.pending[0] as Buffer).length < MESSAGE_HEADER_BYTES) this.flatten();
      const head = this.pending[0] as Buffer;
      const length = head.readUInt32BE(1);
      if (length > this.maxBytes) {
        throw new GrpcWireError(
          GrpcStatus.RESOURCE_EXHAUSTED,
          `Received message larger than max (${length} vs. ${this.maxBytes})`,
        );
      }
      if (this.pendingBytes < MESSAGE_HEADER_BYTES + length) return out;
      if (head.length < MESSAGE_HEADER_BYTES + length) this.flatten();
      const buf = this.pending[0] as Buffer;
      const compressed = buf[0] === 1;
      const body = buf.subarray(MESSAGE_HEADER_BYTES, MESSAGE_HEADER_BYTES + length);
      const rest = buf.subarray(MESSAGE_HEADER_BYTES + length);
      if (rest.length > 0) this.pending[0] = rest;
      else this.pending.shift();
      this.pendingBytes -= MESSAGE_HEADER_BYTES + length;
      out.push(compressed ? this.decompress(body) : body);
    }
  }

  /** Bytes of an unfinished message are left (the stream ended inside a message). */
  get partial(): boolean {
    return this.pendingBytes > 0;
  }

  private flatten(): void {
    this.pending = [Buffer.concat(this.pending, this.pendingBytes)];
  }

  private decompress(body: Buffer): Buffer {
    const opts = { maxOutputLength: this.maxBytes };
    try {
      if (this.encoding === 'gzip') return gunzipSync(body, opts);
      if (this.encoding === 'deflate') return inflateSync(body, opts);
    } catch (e) {
      throw new GrpcWireError(
        GrpcStatus.INTERNAL,
        `Failed to decompress message: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    throw new GrpcWireError(
      GrpcStatus.UNIMPLEMENTED,
      `Received message compressed with unsupported encoding "${this.encoding ?? 'identity'}"`,
    );
  }
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/**
 * The longest deadline a timer can carry (Node clamps longer setTimeout delays to 1 ms); longer
 * `grpc-timeout` values (grpc-go sends 30 days as `2592000S`) mean no deadline in practice.
 */
export const GRPC_TIMEOUT_MAX_MS = 2 ** 31 - 1;

/**
 * A `grpc-timeout` value (1–8 digits and a unit) in ms; undefined when malformed or longer than
 * GRPC_TIMEOUT_MAX_MS (treated as no deadline).
 */
export function parseGrpcTimeout(value: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  const ms = Number(m[1]) * (TIMEOUT_UNIT_MS[m[2] as string] as number);
  return ms > GRPC_TIMEOUT_MAX_MS ? undefined : ms;
}

/** `grpc-message`: UTF-8, with '%' and bytes outside 0x20–0x7E percent-encoded. */
export function encodeGrpcMessage(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
