// A simulated disk with a page cache. Appends are visible at once but durable only after a sync
// completes; a crash keeps the synced bytes, a random prefix of the unsynced appends and possibly
// one torn append (its tail sectors zeroed), and drops replaces that had not completed — crash
// states of the kind ALICE enumerates (Pillai et al., "All File Systems Are Not Created Equal",
// OSDI 2014).
import type { Prng } from '../core/base/prng.js';
import type { Disk } from '../replica/io.js';
import type { EventQueue } from '../core/base/event-queue.js';

interface SimFile {
  /** Durable content as chunks (concatenated only when read, to keep syncs O(1)). */
  durable: Uint8Array[];
  durableBytes: number;
  /** Appends not yet covered by a completed sync, oldest first. */
  unsynced: Uint8Array[];
}

export interface DiskFaults {
  /** Probability that a crash tears the first lost append instead of dropping it whole. */
  readonly tornWriteProbability: number;
  /** Sector size of tearing, in bytes. */
  readonly sectorBytes: number;
  /** Mean latency of a sync or replace in milliseconds. */
  readonly syncMeanMs: number;
}

export class SimDisk implements Disk {
  private files = new Map<string, SimFile>();
  private busyUntil = 0;
  /** Bumped on crash: completions scheduled before it are void. */
  private epoch = 0;
  /** Bytes ever synced, for the report. */
  syncs = 0;
  /** Told when a sync is issued (a nemesis aims crashes at the window before it completes). */
  onSyncIssued: (() => void) | undefined;
  /** Told when a replace has completed (a nemesis crashes between two replaces). */
  onReplaced: ((name: string) => void) | undefined;

  constructor(
    private readonly q: EventQueue,
    private readonly prng: Prng,
    private readonly faults: DiskFaults,
    /** Runs a completion when the node is able to (a paused node runs it on resume). */
    private readonly deliver: (fn: () => void) => void,
  ) {}

  private file(name: string): SimFile {
    let f = this.files.get(name);
    if (!f) {
      f = { durable: [], durableBytes: 0, unsynced: [] };
      this.files.set(name, f);
    }
    return f;
  }

  read(name: string): Uint8Array | undefined {
    const f = this.files.get(name);
    // A file whose first write (an atomic replace) never completed does not exist.
    if (!f || (f.durable.length === 0 && f.unsynced.length === 0)) return undefined;
    return concat([...f.durable, ...f.unsynced]);
  }

  /** Appends to `name` not yet covered by a completed sync, oldest first (for the checkers). */
  unsynced(name: string): readonly Uint8Array[] {
    return this.files.get(name)?.unsynced ?? [];
  }

  append(name: string, bytes: Uint8Array): void {
    this.file(name).unsynced.push(bytes.slice());
  }

  private complete(fn: () => void): void {
    const epoch = this.epoch;
    const latency = 0.05 + this.prng.exp(this.faults.syncMeanMs);
    this.busyUntil = Math.max(this.busyUntil, this.q.now) + latency;
    this.q.at(this.busyUntil, 7, () => {
      if (epoch === this.epoch) this.deliver(fn);
    });
  }

  sync(name: string, done: () => void): void {
    const f = this.file(name);
    const n = f.unsynced.length;
    const epoch = this.epoch;
    this.complete(() => {
      if (epoch !== this.epoch) return;
      for (const b of f.unsynced.splice(0, n)) {
        f.durable.push(b);
        f.durableBytes += b.length;
      }
      this.syncs++;
      done();
    });
    this.onSyncIssued?.();
  }

  replace(name: string, bytes: Uint8Array, done: () => void): void {
    const f = this.file(name);
    const copy = bytes.slice();
    // Appends issued before the replace are superseded by it (the caller rewrote the file).
    const superseded = f.unsynced.length;
    this.complete(() => {
      f.durable = [copy];
      f.durableBytes = copy.length;
      f.unsynced.splice(0, superseded);
      done();
      this.onReplaced?.(name);
    });
  }

  /** Atomic in the simulation: the cut file replaces the old one when it completes. */
  truncate(name: string, length: number, done: () => void): void {
    this.replace(name, (this.read(name) ?? new Uint8Array(0)).subarray(0, length), done);
  }

  /** The machine lost power: keep what a real disk might have kept. */
  crash(): void {
    this.epoch++;
    this.busyUntil = 0;
    for (const f of this.files.values()) {
      if (f.unsynced.length === 0) continue;
      const keep = this.prng.int(0, f.unsynced.length + 1);
      const kept = f.unsynced.slice(0, keep);
      const next = f.unsynced[keep];
      if (next && this.prng.chance(this.faults.tornWriteProbability)) {
        kept.push(
          tear(next, f.durableBytes + concatLength(kept), this.faults.sectorBytes, this.prng),
        );
      }
      for (const b of kept) {
        f.durable.push(b);
        f.durableBytes += b.length;
      }
      f.unsynced = [];
    }
  }
}

/** A write that reached the disk only in part: from some sector boundary on, zeros. */
function tear(write: Uint8Array, offset: number, sectorBytes: number, prng: Prng): Uint8Array {
  const out = write.slice();
  const keep = prng.int(0, write.length);
  const boundary = Math.ceil((offset + keep) / sectorBytes) * sectorBytes - offset;
  out.fill(0, Math.min(boundary, out.length));
  return out;
}

function concatLength(parts: readonly Uint8Array[]): number {
  let n = 0;
  for (const p of parts) n += p.length;
  return n;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  if (parts.length === 0) return new Uint8Array(0);
  const out = new Uint8Array(concatLength(parts));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
