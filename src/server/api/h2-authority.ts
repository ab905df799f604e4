// etcd 3.4's Go client, dialing a member by its URL (etcdctl endpoint status, hashkv, defrag,
// snapshot, move-leader, and every `--cluster` command), sends the HTTP/2 pseudo-header
// `:authority: http://127.0.0.1:2379` — the whole URL. Go's HTTP/2 server accepts that; Node's
// (nghttp2) refuses the stream with PROTOCOL_ERROR, so those commands failed against tenure
// while working against etcd. The listener answers the client's preface itself and looks at
// the first request (sniffH2): a connection whose :authority is host:port goes to the gRPC
// server as it is, with no layer in between; one with a URL goes through AuthorityFixStream,
// which rewrites every header block of the connection with the authority cut to host:port.
//
// Rewritten blocks are decoded with the client's HPACK state (hpack.js keeps its dynamic table)
// and re-encoded as literals without indexing, so the server's decoder table never changes and
// cannot drift from ours (RFC 7541 §6.2.2). Frame layout: RFC 9113 §4.1, §6.2, §6.10.
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import hpack from 'hpack.js';

const PREFACE_BYTES = 24;
const FRAME_HEADER_BYTES = 9;
const TYPE_HEADERS = 0x1;
const TYPE_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;
/** The server's SETTINGS_MAX_FRAME_SIZE is the protocol default (RFC 9113 §6.5.2). */
const FRAME_PAYLOAD_MAX = 16_384;
/** A client's header block at most, before the connection is refused. */
const HEADER_BLOCK_BYTES_MAX = 1024 * 1024;
const HPACK_TABLE_BYTES = 4096;

type Mode = 'sniff' | 'pass' | 'rewrite';

const TYPE_SETTINGS = 0x4;
const FLAG_ACK = 0x1;

/**
 * An empty SETTINGS frame: the server preface (RFC 9113 §3.4). Sent by the listener itself so
 * that a client which waits for it (grpc-go does) sends its first request, whose :authority
 * decides how the connection is served, before the gRPC server sees any byte.
 */
export const SERVER_PREFACE_SETTINGS: Buffer = Buffer.from([0, 0, 0, TYPE_SETTINGS, 0, 0, 0, 0, 0]);

/** What the client has sent so far tells: `wait` for more, or how to serve the connection. */
export type H2Sniff =
  | { readonly kind: 'wait' }
  | {
      readonly kind: 'pass' | 'rewrite';
      /** The client's bytes so far without its ACK of our preface SETTINGS (the gRPC server
       * sends its own SETTINGS and must see only the ACK of those). */
      readonly replay: Buffer;
    };

/**
 * After the listener sent SERVER_PREFACE_SETTINGS: wait for the client's ACK of it and its first
 * header block, then judge that block's :authority.
 */
export function sniffH2(buf: Buffer): H2Sniff {
  if (buf.length < PREFACE_BYTES) return { kind: 'wait' };
  let off = PREFACE_BYTES;
  let ack: [number, number] | undefined;
  let headersEnd: number | undefined;
  const parts: Buffer[] = [];
  while (off + FRAME_HEADER_BYTES <= buf.length) {
    const length = buf.readUIntBE(off, 3);
    const end = off + FRAME_HEADER_BYTES + length;
    if (end > buf.length) break;
    const type = buf.readUInt8(off + 3);
    const flags = buf.readUInt8(off + 4);
    if (type === TYPE_SETTINGS && flags & FLAG_ACK && ack === undefined) ack = [off, end];
    if (headersEnd === undefined && (type === TYPE_HEADERS || type === TYPE_CONTINUATION)) {
      const payload = buf.subarray(off + FRAME_HEADER_BYTES, end);
      if (type === TYPE_HEADERS) {
        let p = 0;
        let pad = 0;
        if (flags & FLAG_PADDED) {
          pad = payload.readUInt8(0);
          p = 1;
        }
        if (flags & FLAG_PRIORITY) p += 5;
        parts.push(payload.subarray(p, payload.length - pad));
      } else parts.push(payload);
      if (flags & FLAG_END_HEADERS) headersEnd = end;
    }
    off = end;
  }
  if (ack === undefined || headersEnd === undefined) return { kind: 'wait' };
  const decoder = hpack.decompressor.create({ table: { size: HPACK_TABLE_BYTES } });
  decoder.write(Buffer.concat(parts));
  decoder.execute();
  let bad = false;
  for (;;) {
    const h = decoder.read();
    if (h === null) break;
    if (h.name === ':authority' && authorityOf(h.value) !== h.value) bad = true;
  }
  const replay = Buffer.concat([buf.subarray(0, ack[0]), buf.subarray(ack[1])]);
  return { kind: bad ? 'rewrite' : 'pass', replay };
}

/** `http://host:port/...` → `host:port`; anything else as it is. */
export function authorityOf(value: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/]*)/i.exec(value);
  return m ? (m[1] as string) : value;
}

function hpackInt(out: number[], value: number, prefixBits: number, firstByte: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(firstByte | value);
    return;
  }
  out.push(firstByte | max);
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** HPACK "literal header field without indexing, new name", no Huffman (RFC 7541 §6.2.2). */
export function encodeLiteralBlock(headers: readonly { name: string; value: string }[]): Buffer {
  const parts: Buffer[] = [];
  for (const h of headers) {
    const name = Buffer.from(h.name, 'latin1');
    const value = Buffer.from(h.value, 'latin1');
    const head: number[] = [0x00];
    hpackInt(head, name.length, 7, 0);
    const mid: number[] = [];
    hpackInt(mid, value.length, 7, 0);
    parts.push(Buffer.from(head), name, Buffer.from(mid), value);
  }
  return Buffer.concat(parts);
}

function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const b = Buffer.alloc(FRAME_HEADER_BYTES);
  b.writeUIntBE(length, 0, 3);
  b.writeUInt8(type, 3);
  b.writeUInt8(flags, 4);
  b.writeUInt32BE(streamId & 0x7fffffff, 5);
  return b;
}

export class AuthorityFixStream extends Duplex {
  private mode: Mode = 'sniff';
  private buf: Buffer = Buffer.alloc(0);
  private prefaceSeen = false;
  private readonly decoder = hpack.decompressor.create({ table: { size: HPACK_TABLE_BYTES } });
  /** The header block being collected: its HEADERS frame's stream, flags and priority bytes. */
  private block: { streamId: number; flags: number; priority: Buffer; parts: Buffer[] } | null =
    null;

  constructor(
    private readonly socket: Socket,
    initial?: Buffer,
  ) {
    super();
    if (initial !== undefined && initial.length > 0) this.fromClient(initial);
    socket.on('data', (chunk: Buffer) => this.fromClient(chunk));
    socket.on('end', () => this.push(null));
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.socket.write(chunk, cb);
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.socket.end(cb);
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.socket.destroy();
    cb(err);
  }

  private fromClient(chunk: Buffer): void {
    if (this.mode === 'pass') {
      if (!this.push(chunk)) this.socket.pause();
      return;
    }
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    try {
      this.processFrames();
    } catch (e) {
      this.destroy(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private processFrames(): void {
    if (!this.prefaceSeen) {
      if (this.buf.length < PREFACE_BYTES) return;
      this.emitOut(this.buf.subarray(0, PREFACE_BYTES));
      this.buf = this.buf.subarray(PREFACE_BYTES);
      this.prefaceSeen = true;
    }
    while (this.mode !== 'pass' && this.buf.length >= FRAME_HEADER_BYTES) {
      const length = this.buf.readUIntBE(0, 3);
      if (this.buf.length < FRAME_HEADER_BYTES + length) return;
      const frame = this.buf.subarray(0, FRAME_HEADER_BYTES + length);
      this.buf = this.buf.subarray(FRAME_HEADER_BYTES + length);
      this.onFrame(frame);
    }
    if (this.mode === 'pass' && this.buf.length > 0) {
      this.emitOut(this.buf);
      this.buf = Buffer.alloc(0);
    }
  }

  private onFrame(frame: Buffer): void {
    const type = frame.readUInt8(3);
    const flags = frame.readUInt8(4);
    const streamId = frame.readUInt32BE(5) & 0x7fffffff;
    const payload = frame.subarray(FRAME_HEADER_BYTES);
    if (type === TYPE_HEADERS) {
      let off = 0;
      let padLength = 0;
      if (flags & FLAG_PADDED) {
        padLength = payload.readUInt8(0);
        off = 1;
      }
      const priority = flags & FLAG_PRIORITY ? payload.subarray(off, off + 5) : Buffer.alloc(0);
      off += priority.length;
      const fragment = payload.subarray(off, payload.length - padLength);
      this.block = { streamId, flags, priority, parts: [fragment] };
    } else if (type === TYPE_CONTINUATION && this.block !== null) {
      this.block.parts.push(payload);
    } else {
      this.emitOut(frame);
      return;
    }
    const total = this.block.parts.reduce((n, p) => n + p.length, 0);
    if (total > HEADER_BLOCK_BYTES_MAX) throw new Error('h2: header block too large');
    if (!(flags & FLAG_END_HEADERS)) return;
    this.endBlock();
  }

  private endBlock(): void {
    const block = this.block;
    if (block === null) return;
    this.block = null;
    this.decoder.write(Buffer.concat(block.parts));
    this.decoder.execute();
    const headers: { name: string; value: string }[] = [];
    for (;;) {
      const h = this.decoder.read();
      if (h === null) break;
      headers.push({ name: h.name, value: h.value });
    }
    const authority = headers.find((h) => h.name === ':authority');
    if (this.mode === 'sniff') {
      const bad = authority !== undefined && authorityOf(authority.value) !== authority.value;
      if (!bad) {
        // The first block is fine: hand it over as it came and stop looking.
        this.emitHeaders(block.streamId, block.flags, block.priority, Buffer.concat(block.parts));
        this.mode = 'pass';
        return;
      }
      this.mode = 'rewrite';
    }
    for (const h of headers) if (h.name === ':authority') h.value = authorityOf(h.value);
    this.emitHeaders(block.streamId, block.flags, block.priority, encodeLiteralBlock(headers));
  }

  /** One HEADERS frame (no padding), then CONTINUATIONs if the block is larger than a frame. */
  private emitHeaders(streamId: number, flags: number, priority: Buffer, block: Buffer): void {
    const first = block.subarray(0, FRAME_PAYLOAD_MAX - priority.length);
    let rest = block.subarray(first.length);
    const keep =
      (flags & (FLAG_END_STREAM | FLAG_PRIORITY)) | (rest.length === 0 ? FLAG_END_HEADERS : 0);
    this.emitOut(
      Buffer.concat([
        frameHeader(priority.length + first.length, TYPE_HEADERS, keep, streamId),
        priority,
        first,
      ]),
    );
    while (rest.length > 0) {
      const piece = rest.subarray(0, FRAME_PAYLOAD_MAX);
      rest = rest.subarray(piece.length);
      const f = rest.length === 0 ? FLAG_END_HEADERS : 0;
      this.emitOut(
        Buffer.concat([frameHeader(piece.length, TYPE_CONTINUATION, f, streamId), piece]),
      );
    }
  }

  private emitOut(bytes: Buffer): void {
    if (!this.push(bytes)) this.socket.pause();
  }
}
