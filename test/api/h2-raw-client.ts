// A frame-level HTTP/2 client over `net`, for tests that need frames in an order no HTTP/2
// library lets a caller choose (a GOAWAY before a HEADERS, say). It sends what it is told, ACKs
// every SETTINGS it gets, and keeps every frame the server sends, with header blocks decoded.
// Frame layout: RFC 9113 §4.1 and §6.
import * as net from 'node:net';
import hpack from 'hpack.js';
import { encodeLiteralBlock } from '../../src/server/api/h2-authority.js';

export const FRAME = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
} as const;

export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** RFC 9113 §7. */
export const H2_NO_ERROR = 0x0;
export const H2_PROTOCOL_ERROR = 0x1;
export const H2_REFUSED_STREAM = 0x7;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
  /** HEADERS only: the decoded header block (no CONTINUATION: the server's blocks are small). */
  readonly headers?: ReadonlyMap<string, string>;
}

export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** GOAWAY (RFC 9113 §6.8): last-stream-id and error code. */
export function goaway(lastStreamId: number, code: number): Buffer {
  const p = Buffer.alloc(8);
  p.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  p.writeUInt32BE(code, 4);
  return frame(FRAME.GOAWAY, 0, 0, p);
}

/** RST_STREAM (RFC 9113 §6.4) with `code`. */
export function rstStream(streamId: number, code: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code, 0);
  return frame(FRAME.RST_STREAM, 0, streamId, p);
}

/** WINDOW_UPDATE (RFC 9113 §6.9): stream 0 for the connection's window. */
export function windowUpdate(streamId: number, increment: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment & 0x7fffffff, 0);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, p);
}

/** The HEADERS frame that opens a gRPC call to `path` on `streamId` (no END_STREAM). */
export function requestHeaders(streamId: number, path: string): Buffer {
  const block = encodeLiteralBlock([
    { name: ':method', value: 'POST' },
    { name: ':scheme', value: 'http' },
    { name: ':path', value: path },
    { name: ':authority', value: '127.0.0.1' },
    { name: 'content-type', value: 'application/grpc' },
    { name: 'te', value: 'trailers' },
  ]);
  return frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, block);
}

/** One gRPC message in one DATA frame; `end` half-closes the stream. */
export function messageFrame(streamId: number, message: Buffer, end: boolean): Buffer {
  const body = Buffer.alloc(5 + message.length);
  body.writeUInt32BE(message.length, 1);
  message.copy(body, 5);
  return frame(FRAME.DATA, end ? FLAG.END_STREAM : 0, streamId, body);
}

/** HEADERS and one DATA frame with END_STREAM: a whole unary gRPC request on `streamId`. */
export function unaryRequest(streamId: number, path: string, message: Buffer): Buffer {
  return Buffer.concat([requestHeaders(streamId, path), messageFrame(streamId, message, true)]);
}

export class RawH2Client {
  readonly frames: Frame[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private readonly decoder = hpack.decompressor.create({ table: { size: 4096 } });

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Connect and send the client preface with an empty SETTINGS (RFC 9113 §3.4). */
  static connect(port: number): Promise<RawH2Client> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.off('error', reject);
        const c = new RawH2Client(socket);
        socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));
        resolve(c);
      });
      socket.once('error', reject);
    });
  }

  /** Send these bytes in one write. */
  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Half-close our side. */
  end(): void {
    this.socket.end();
  }

  /** Stop reading the socket (a client that never reads its answers); `resume` reads again. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Our side's port: the server's `remotePort` for this connection. */
  get localPort(): number {
    return this.socket.localPort ?? 0;
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Resolves with the first frame `match` accepts, or rejects after `ms` or on close. */
  async waitFor(what: string, match: (f: Frame) => boolean, ms = 10_000): Promise<Frame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const f = this.frames.find(match);
      if (f !== undefined) return f;
      if (this.closed) throw new Error(`connection closed before ${what}${this.goawaySeen()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves once the server has closed the connection; rejects after `ms`. */
  async waitClosed(ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`connection still open after ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** The server's GOAWAYs, for an error message. */
  private goawaySeen(): string {
    const seen = this.frames
      .filter((f) => f.type === FRAME.GOAWAY)
      .map(
        (f) =>
          `GOAWAY last-stream-id ${f.payload.readUInt32BE(0)} code ${f.payload.readUInt32BE(4)}`,
      );
    return seen.length === 0 ? '' : ` (server sent ${seen.join(', ')})`;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 9) {
      const length = this.buf.readUIntBE(0, 3);
      if (this.buf.length < 9 + length) break;
      const type = this.buf.readUInt8(3);
      const flags = this.buf.readUInt8(4);
      const streamId = this.buf.readUInt32BE(5) & 0x7fffffff;
      const payload = this.buf.subarray(9, 9 + length);
      this.buf = this.buf.subarray(9 + length);
      if (type === FRAME.SETTINGS && !(flags & FLAG.ACK)) {
        this.socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0)));
      }
      this.frames.push(
        type === FRAME.HEADERS
          ? { type, flags, streamId, payload, headers: this.decode(payload) }
          : { type, flags, streamId, payload },
      );
    }
    this.wake();
  }

  private decode(block: Buffer): Map<string, string> {
    this.decoder.write(block);
    this.decoder.execute();
    const out = new Map<string, string>();
    for (;;) {
      const h = this.decoder.read();
      if (h === null) break;
      out.set(h.name, h.value);
    }
    return out;
  }
}

/** The stream's end as the server sent it: its trailers (END_STREAM) or its RST_STREAM. */
export const streamEnd =
  (streamId: number) =>
  (f: Frame): boolean =>
    f.streamId === streamId &&
    (f.type === FRAME.RST_STREAM ||
      (f.type === FRAME.HEADERS && (f.flags & FLAG.END_STREAM) !== 0));
