// The member's Disk with its timings kept for /metrics: etcd's WAL fsync histogram, its backend
// commit histogram (which tenure has no backend for: see docs/operations.md, "Metrics") and the
// bytes written to the WAL. One clock reading before and after each fsync or replace.
import type { Disk } from '../../replica/io.js';
import { WAL_FILE } from '../../replica/wal.js';
import { Buckets, exponentialBuckets } from './histogram.js';

/**
 * etcd's bounds for both disk histograms: 1 ms to about 8 s, doubling
 * (etcd 3.4 wal/metrics.go, mvcc/backend/metrics.go).
 */
export const DISK_BUCKETS_SECONDS = exponentialBuckets(0.001, 2, 14);

export class MeteredDisk implements Disk {
  /** fdatasync of the WAL: etcd_disk_wal_fsync_duration_seconds. */
  readonly walFsync = new Buckets(DISK_BUCKETS_SECONDS);
  /**
   * Each durable replace of a whole file (the snapshot file, the WAL rewritten behind it):
   * write, fsync, rename and directory fsync, on the main thread. etcd_disk_backend_commit_
   * duration_seconds, the moment the applied state becomes durable outside the WAL.
   */
  readonly commit = new Buckets(DISK_BUCKETS_SECONDS);
  /** Bytes written to the WAL, appended or rewritten: etcd_disk_wal_write_bytes_total. */
  walBytes = 0;

  constructor(private readonly disk: Disk) {}

  read(name: string): Uint8Array | undefined {
    return this.disk.read(name);
  }

  append(name: string, bytes: Uint8Array): void {
    if (name === WAL_FILE) this.walBytes += bytes.length;
    this.disk.append(name, bytes);
  }

  sync(name: string, done: () => void): void {
    if (name !== WAL_FILE) return this.disk.sync(name, done);
    const startMs = performance.now();
    this.disk.sync(name, () => {
      this.walFsync.observe((performance.now() - startMs) / 1000);
      done();
    });
  }

  replace(name: string, bytes: Uint8Array, done: () => void): void {
    if (name === WAL_FILE) this.walBytes += bytes.length;
    const startMs = performance.now();
    // FileDisk's replace does its work before it returns and calls back on a later turn.
    this.disk.replace(name, bytes, done);
    this.commit.observe((performance.now() - startMs) / 1000);
  }

  truncate(name: string, length: number, done: () => void): void {
    this.disk.truncate(name, length, done);
  }
}
