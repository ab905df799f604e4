// Little-endian binary writer and reader for the WAL, the peer wire format and snapshots. The
// reader throws a typed error when a record ends early, so callers can tell truncation from a bug.

export class TruncatedBytesError extends Error {
  override readonly name = 'TruncatedBytesError';
}

export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  len = 0;

  constructor(initialBytes = 256) {
    this.buf = new Uint8Array(initialBytes);
    this.view = new DataView(this.buf.buffer);
  }

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    this.room(1);
    this.view.setUint8(this.len, v);
    this.len += 1;
  }
  u32(v: number): void {
    this.room(4);
    this.view.setUint32(this.len, v, true);
    this.len += 4;
  }
  /** Overwrite the u32 at `at`, already written (a count known only at the end). */
  setU32(at: number, v: number): void {
    this.view.setUint32(at, v, true);
  }
  f64(v: number): void {
    this.room(8);
    this.view.setFloat64(this.len, v, true);
    this.len += 8;
  }
  i64(v: bigint): void {
    this.room(8);
    this.view.setBigInt64(this.len, v, true);
    this.len += 8;
  }
  /** `b` behind its length (u32). */
  bytes(b: Uint8Array): void {
    this.u32(b.length);
    this.raw(b);
  }
  /** `b` as it is, no length: the reader must know where it ends. */
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  /** What was written: the buffer itself when it was sized exactly, else a copy of its start. */
  done(): Uint8Array {
    return this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
  }
}

export class ByteReader {
  private readonly view: DataView;
  pos = 0;
  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length)
      throw new TruncatedBytesError(
        `need ${n} bytes at ${this.pos}, have ${this.buf.length - this.pos}`,
      );
  }
  u8(): number {
    this.need(1);
    return this.view.getUint8(this.pos++);
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  i64(): bigint {
    this.need(8);
    const v = this.view.getBigInt64(this.pos, true);
    this.pos += 8;
    return v;
  }
  /** A copy of the next length-prefixed bytes. */
  bytes(): Uint8Array {
    const n = this.u32();
    this.need(n);
    const b = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /** Bytes not read yet: a decoder checks a count against it before building anything. */
  get left(): number {
    return this.buf.length - this.pos;
  }
  /** Everything not read yet, without a copy. */
  rest(): Uint8Array {
    const b = this.buf.subarray(this.pos);
    this.pos = this.buf.length;
    return b;
  }
}
