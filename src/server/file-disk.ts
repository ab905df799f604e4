// The replica's Disk on a real filesystem. Appends go to the page cache with write(2) and become
// durable when a later fdatasync(2) returns; a replace writes a temporary file, fsyncs it, renames
// it over the old one and fsyncs the directory, so a crash leaves the old or the new file, never a
// mix (etcd#6368: without the directory fsync an acknowledged write can vanish).
//
// Appended files grow in preallocated steps of zeros (PREALLOCATE_BYTES), as etcd preallocates
// its WAL segments: an fdatasync that must also make a new file size durable commits the ext4
// journal, one that only overwrites allocated blocks does not. On the project's machine that took
// an fdatasync of a 300-byte append from ~200 to ~130 µs, and its kernel CPU from ~60 to ~35 µs.
// The zeros after the last record read as the end of the log (wal.ts).
//
// Appends wait in memory until the file's next sync (or read, truncate, replace, close, or
// PENDING_BYTES_MAX) and go out as one positioned writev(2): the replica appends a hard state and
// an entry batch per Ready, and commit-only hard states between syncs, 7-9 writes per
// fdatasync under load, each a syscall on the main thread. Nothing is lost that was promised:
// appended bytes are durable only once a later sync returns, whether they reached the page cache
// at the append or just before the sync.
//
// A failed fsync is fatal: after a failed writeback Linux may mark the pages clean, so a retried
// fsync can report success for data that is gone ("fsyncgate", 2018). The node stops instead.
import {
  closeSync,
  existsSync,
  fdatasync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
  writevSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Disk } from '../replica/io.js';

/** Zeros added at a time past the end of an appended file; one write and one flush per step. */
export const PREALLOCATE_BYTES = 1024 * 1024;

/** Appended bytes held for one file before they are written without waiting for a sync. */
export const PENDING_BYTES_MAX = 256 * 1024;

const ZEROS = Buffer.alloc(PREALLOCATE_BYTES);

/**
 * An open appended file: where its written records end, where its allocated zeros end, and the
 * appends not yet written (they follow `end`).
 */
interface OpenFile {
  readonly fd: number;
  end: number;
  allocated: number;
  pending: Uint8Array[];
  pendingBytes: number;
}

export class DiskFailure extends Error {
  override readonly name = 'DiskFailure';
  readonly code = 'DISK_FAILURE';
}

export interface FileDiskOptions {
  /** Called when a sync or write fails; the default ends the process (fail-stop). */
  readonly onFatal?: (e: DiskFailure) => void;
}

export class FileDisk implements Disk {
  private readonly files = new Map<string, OpenFile>();
  private readonly onFatal: (e: DiskFailure) => void;
  private closed = false;

  constructor(
    readonly dir: string,
    opts: FileDiskOptions = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.onFatal =
      opts.onFatal ??
      ((e) => {
        process.stderr.write(`tenure: ${e.message}; stopping (fail-stop)\n`);
        process.exit(70);
      });
  }

  private path(name: string): string {
    if (!/^[a-z0-9._-]+$/i.test(name)) throw new RangeError(`bad file name '${name}'`);
    return join(this.dir, name);
  }

  private open(name: string): OpenFile {
    let f = this.files.get(name);
    if (f === undefined) {
      const p = this.path(name);
      const existed = existsSync(p);
      const fd = openSync(p, existed ? 'r+' : 'w+');
      // Records end where the file ends: a zero tail left by an earlier run was cut off by the
      // replica's recovery (truncate) before anything is appended.
      const size = fstatSync(fd).size;
      f = { fd, end: size, allocated: size, pending: [], pendingBytes: 0 };
      this.files.set(name, f);
      // A new file must survive a crash too: its directory entry is made durable now.
      if (!existed) this.syncDir();
    }
    return f;
  }

  read(name: string): Uint8Array | undefined {
    const p = this.path(name);
    this.writePending(name);
    if (!existsSync(p)) return undefined;
    const bytes = new Uint8Array(readFileSync(p));
    // While the file is open here its end is known; a later run sees the zero tail too.
    const f = this.files.get(name);
    return f === undefined ? bytes : bytes.subarray(0, f.end);
  }

  append(name: string, bytes: Uint8Array): void {
    let f: OpenFile;
    try {
      f = this.open(name);
    } catch (e) {
      this.fail(`write to ${name} failed`, e);
      return;
    }
    f.pending.push(bytes);
    f.pendingBytes += bytes.length;
    if (f.pendingBytes >= PENDING_BYTES_MAX) this.writePending(name);
  }

  /** Write the file's pending appends at its end, zeros first where they do not fit. */
  private writePending(name: string): void {
    const f = this.files.get(name);
    if (f === undefined || f.pendingBytes === 0) return;
    try {
      while (f.end + f.pendingBytes > f.allocated) {
        writeAll(f.fd, ZEROS, f.allocated);
        f.allocated += ZEROS.length;
      }
      writevAll(f.fd, f.pending, f.pendingBytes, f.end);
      f.end += f.pendingBytes;
      f.pending = [];
      f.pendingBytes = 0;
    } catch (e) {
      this.fail(`write to ${name} failed`, e);
    }
  }

  sync(name: string, done: () => void): void {
    this.writePending(name);
    fdatasync(this.open(name).fd, (err) => {
      if (this.closed) return;
      if (err) this.fail(`fdatasync of ${name} failed`, err);
      else done();
    });
  }

  replace(name: string, bytes: Uint8Array, done: () => void): void {
    const target = this.path(name);
    const tmp = `${target}.tmp`;
    try {
      // Appends before a replace are overwritten by it: dropped, not written.
      const old = this.files.get(name);
      if (old !== undefined) {
        closeSync(old.fd);
        this.files.delete(name);
      }
      const fd = openSync(tmp, 'w');
      writeAll(fd, bytes, 0);
      fsyncSync(fd);
      closeSync(fd);
      renameSync(tmp, target);
      this.syncDir();
    } catch (e) {
      this.fail(`replacing ${name} failed`, e);
      return;
    }
    // Callbacks never run inside the call that asked for them, as with sync().
    setImmediate(() => {
      if (!this.closed) done();
    });
  }

  truncate(name: string, length: number, done: () => void): void {
    let f: OpenFile;
    try {
      this.writePending(name);
      f = this.open(name);
      ftruncateSync(f.fd, length);
      f.end = length;
      f.allocated = length;
    } catch (e) {
      this.fail(`truncating ${name} failed`, e);
      return;
    }
    // The new size is metadata fdatasync(2) makes durable.
    this.sync(name, done);
  }

  private syncDir(): void {
    const fd = openSync(this.dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  private fail(what: string, cause: unknown): void {
    const e = new DiskFailure(
      `${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.onFatal(e);
  }

  close(): void {
    for (const name of this.files.keys()) this.writePending(name);
    this.closed = true;
    for (const f of this.files.values()) closeSync(f.fd);
    this.files.clear();
  }
}

/**
 * Write all of `chunks` (`total` bytes) in order at `position`, in one writev when the kernel
 * takes it all.
 */
function writevAll(fd: number, chunks: Uint8Array[], total: number, position: number): void {
  if (chunks.length === 1) {
    writeAll(fd, chunks[0] as Uint8Array, position);
    return;
  }
  const wrote = writevSync(fd, chunks, position);
  if (wrote === total) return;
  // A short writev (rare: a signal, a full disk on the way to failing): the rest one by one.
  let skip = wrote;
  let at = position + wrote;
  for (const c of chunks) {
    if (skip >= c.length) {
      skip -= c.length;
      continue;
    }
    writeAll(fd, c.subarray(skip), at);
    at += c.length - skip;
    skip = 0;
  }
}

/** Write all of `bytes` at `position` (writeSync may write less than asked). */
function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let off = 0;
  while (off < bytes.length) {
    off += writeSync(fd, bytes, off, bytes.length - off, position + off);
  }
}
