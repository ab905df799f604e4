// The replica's Disk on a real filesystem. Appends go to the page cache with write(2) and become
// durable when a later fdatasync(2) returns; a replace writes a temporary file, fsyncs it, renames
// it over the old one and fsyncs the directory, so a crash leaves the old or the new file, never a
// mix (etcd#6368: without the directory fsync an acknowledged write can vanish).
//
// A failed fsync is fatal: after a failed writeback Linux may mark the pages clean, so a retried
// fsync can report success for data that is gone ("fsyncgate", 2018). The node stops instead.
import {
  closeSync,
  existsSync,
  fdatasync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Disk } from '../replica/io.js';

export class DiskFailure extends Error {
  override readonly name = 'DiskFailure';
  readonly code = 'DISK_FAILURE';
}

export interface FileDiskOptions {
  /** Called when a sync or write fails; the default ends the process (fail-stop). */
  readonly onFatal?: (e: DiskFailure) => void;
}

export class FileDisk implements Disk {
  private readonly fds = new Map<string, number>();
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

  private fd(name: string): number {
    let fd = this.fds.get(name);
    if (fd === undefined) {
      fd = openSync(this.path(name), 'a');
      this.fds.set(name, fd);
      // A new file must survive a crash too: its directory entry is made durable now.
      this.syncDir();
    }
    return fd;
  }

  read(name: string): Uint8Array | undefined {
    const p = this.path(name);
    return existsSync(p) ? new Uint8Array(readFileSync(p)) : undefined;
  }

  append(name: string, bytes: Uint8Array): void {
    const fd = this.fd(name);
    let off = 0;
    try {
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    } catch (e) {
      this.fail(`write to ${name} failed`, e);
    }
  }

  sync(name: string, done: () => void): void {
    fdatasync(this.fd(name), (err) => {
      if (this.closed) return;
      if (err) this.fail(`fdatasync of ${name} failed`, err);
      else done();
    });
  }

  replace(name: string, bytes: Uint8Array, done: () => void): void {
    const target = this.path(name);
    const tmp = `${target}.tmp`;
    try {
      const old = this.fds.get(name);
      if (old !== undefined) {
        closeSync(old);
        this.fds.delete(name);
      }
      const fd = openSync(tmp, 'w');
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
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
    this.closed = true;
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}
