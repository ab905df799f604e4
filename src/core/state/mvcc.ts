// The multi-version key space (etcd's server/storage/mvcc: kvstore.go, index.go): a sorted key
// index, and for each key its history of versions, each stamped with the revision and sub-revision
// that wrote it. A write transaction stages its changes at revision current+1; reads during the
// transaction see them; ending the transaction makes that revision current only if something was
// written.
import { NO_MUTANTS, type Mutants } from '../base/mutants.js';
import { assert } from '../base/assert.js';
import { FNV_OFFSET, fnvBytes, fnvNumber, fnvString } from '../base/hash.js';
import type { Revision } from '../base/units.js';
import { revision } from '../base/units.js';
import type { ByteKey, KeySpan } from './key-range.js';
import { fromByteKey, spanContains } from './key-range.js';
import type { KeyValue, LeaseId, WatchEvent } from './kv-types.js';
import { EMPTY_BYTES } from './kv-types.js';

/** One entry in a key's history: the live value written then, or null for a delete (tombstone). */
export interface KeyVersion {
  readonly rev: number;
  /** Order of this change among the changes of the same revision. */
  readonly sub: number;
  readonly kv: KeyValue | null;
}

/** The store's whole state in plain data, for snapshots. */
export interface MvccData {
  readonly currentRevision: number;
  readonly compactRevision: number;
  readonly keys: readonly (readonly [ByteKey, readonly KeyVersion[]])[];
}

interface PendingWrite {
  readonly rev: number;
  readonly events: WatchEvent[];
}

/** An empty store is at revision 1; the first write is revision 2. */
export const INITIAL_REVISION = 1;

/**
 * Bytes counted per stored version besides its key and value: the revisions, version and lease
 * an on-disk backend would store with it. An estimate; it only feeds the space quota.
 */
export const VERSION_OVERHEAD_BYTES = 32;

function versionBytes(key: ByteKey, v: KeyVersion): number {
  return key.length + (v.kv?.value.length ?? 0) + VERSION_OVERHEAD_BYTES;
}

export class MvccStore {
  /** Planted bugs for the simulator's mutation runs; never set in production. */
  constructor(readonly mutants: Mutants = NO_MUTANTS) {}

  private currentRev = INITIAL_REVISION;
  private compactRev = 0;
  private readonly history = new Map<ByteKey, KeyVersion[]>();
  /** Every key with any history, in byte order. */
  private sortedKeys: ByteKey[] = [];
  private pending: PendingWrite | null = null;
  private sizeBytes = 0;
  /** Keys whose newest version is live (etcd's etcd_debugging_mvcc_keys_total gauge). */
  private liveKeys = 0;

  /** The newest committed revision. */
  get revision(): Revision {
    return revision(this.currentRev);
  }

  /** Reads below this revision fail as compacted; 0 before any compaction. */
  get compactRevision(): Revision {
    return revision(this.compactRev);
  }

  /** The revision a "latest" read sees: current, or current+1 inside a write transaction. */
  get readRevision(): number {
    // The planted bug: reads inside a write transaction miss what it wrote so far.
    if (this.mutants.has('txnReadsStale')) return this.currentRev;
    return this.pending?.rev ?? this.currentRev;
  }

  get writing(): boolean {
    return this.pending !== null;
  }

  /** Estimated bytes of all stored history, for the space quota (etcd's backend size). */
  get size(): number {
    return this.sizeBytes;
  }

  /** Keys that exist now (not deleted), counted as they are written: no scan. */
  get keyCount(): number {
    return this.liveKeys;
  }

  /** The live value of `key` at `rev`, or null. */
  get(key: ByteKey, rev: number = this.readRevision): KeyValue | null {
    const versions = this.history.get(key);
    if (versions === undefined) return null;
    return versionAt(versions, rev)?.kv ?? null;
  }

  /** The live values in `span` at `rev`, in key order. */
  range(span: KeySpan, rev: number = this.readRevision): KeyValue[] {
    const out: KeyValue[] = [];
    this.forEachKey(span, (_key, versions) => {
      const kv = versionAt(versions, rev)?.kv;
      if (kv) out.push(kv);
    });
    return out;
  }

  beginWrite(): void {
    assert(this.pending === null, 'mvcc: nested write transaction');
    this.pending = { rev: this.currentRev + 1, events: [] };
  }

  /** Stage a put at the pending revision; returns the new value and the previous live one. */
  put(key: ByteKey, value: Uint8Array, lease: LeaseId): { kv: KeyValue; prev: KeyValue | null } {
    const p = this.pendingWrite();
    const prev = this.get(key);
    const kv: KeyValue = {
      key: fromByteKey(key),
      createRevision: prev ? prev.createRevision : revision(p.rev),
      modRevision: revision(p.rev),
      version: prev ? prev.version + 1 : this.recreatedVersion(key),
      // The planted bug: this member's copy of the value differs from the one in the log.
      value: this.mutants.has('applyCorruptsValue') ? corrupted(value) : value,
      lease,
    };
    this.append(key, { rev: p.rev, sub: p.events.length, kv });
    if (prev === null) this.liveKeys++;
    p.events.push(prev ? { type: 'PUT', kv, prevKv: prev } : { type: 'PUT', kv });
    return { kv, prev };
  }

  /** Stage a delete of a live key at the pending revision; returns the deleted value. */
  delete(key: ByteKey): KeyValue {
    const p = this.pendingWrite();
    const prev = this.get(key);
    assert(prev !== null, () => `mvcc: delete of absent key ${JSON.stringify(key)}`);
    this.append(key, { rev: p.rev, sub: p.events.length, kv: null });
    this.liveKeys--;
    p.events.push({ type: 'DELETE', kv: tombstoneKv(prev.key, p.rev), prevKv: prev });
    return prev;
  }

  /** End the write transaction: its revision becomes current if it changed anything. */
  endWrite(): { revision: Revision; events: readonly WatchEvent[] } {
    const p = this.pendingWrite();
    this.pending = null;
    if (p.events.length > 0) this.currentRev = p.rev;
    return { revision: revision(this.currentRev), events: p.events };
  }

  /**
   * Drop history that no read at or after `rev` can see: for each key, every version below `rev`
   * except the newest one, which is kept if it is live. Versions at `rev` itself are kept (also
   * tombstones), so a watcher starting exactly at the compact revision misses nothing.
   */
  compact(rev: number): void {
    assert(this.pending === null, 'mvcc: compact inside a write transaction');
    assert(rev > this.compactRev && rev <= this.currentRev, 'mvcc: compact revision out of range');
    this.compactRev = rev;
    const keep: ByteKey[] = [];
    for (const key of this.sortedKeys) {
      const versions = this.history.get(key);
      assert(versions !== undefined, 'mvcc: key index out of step with history');
      let firstKept = versions.findIndex((v) => v.rev >= rev);
      if (firstKept === -1) firstKept = versions.length;
      const newestBelow = versions[firstKept - 1];
      const start = newestBelow?.kv ? firstKept - 1 : firstKept;
      const kept = versions.slice(start);
      for (const v of versions.slice(0, start)) this.sizeBytes -= versionBytes(key, v);
      if (kept.length === 0) {
        this.history.delete(key);
      } else {
        this.history.set(key, kept);
        keep.push(key);
      }
    }
    this.sortedKeys = keep;
  }

  /**
   * The changes to keys in `span` with revisions in [fromRev, toRev], ordered by revision and
   * sub-revision, as watch events. A PUT carries its predecessor as prevKv when it was live.
   */
  eventsBetween(span: KeySpan, fromRev: number, toRev: number): WatchEvent[] {
    const found: { rev: number; sub: number; event: WatchEvent }[] = [];
    this.forEachKey(span, (_key, versions) => {
      for (let i = 0; i < versions.length; i++) {
        const v = versions[i] as KeyVersion;
        if (v.rev < fromRev || v.rev > toRev) continue;
        const prev = versions[i - 1]?.kv ?? null;
        found.push({ rev: v.rev, sub: v.sub, event: eventOf(v, prev) });
      }
    });
    found.sort((a, b) => a.rev - b.rev || a.sub - b.sub);
    return found.map((f) => f.event);
  }

  toData(): MvccData {
    assert(this.pending === null, 'mvcc: snapshot inside a write transaction');
    return {
      currentRevision: this.currentRev,
      compactRevision: this.compactRev,
      keys: this.sortedKeys.map((k) => [k, this.history.get(k) ?? []] as const),
    };
  }

  /**
   * The version of a key written while absent: 1, a new incarnation. The planted bug: it goes on
   * from the version it had before it was deleted.
   */
  private recreatedVersion(key: ByteKey): number {
    if (!this.mutants.has('recreatedKeyKeepsVersion')) return 1;
    const versions = this.history.get(key) ?? [];
    let last = 0;
    for (const v of versions) if (v.kv !== null) last = v.kv.version;
    return last + 1;
  }

  static fromData(data: MvccData, mutants: Mutants = NO_MUTANTS): MvccStore {
    const s = new MvccStore(mutants);
    s.currentRev = data.currentRevision;
    s.compactRev = data.compactRevision;
    for (const [key, versions] of data.keys) {
      assert(versions.length > 0, 'mvcc: snapshot key without history');
      s.history.set(key, [...versions]);
      s.sortedKeys.push(key);
      for (const v of versions) s.sizeBytes += versionBytes(key, v);
      if (versions[versions.length - 1]?.kv) s.liveKeys++;
    }
    for (let i = 1; i < s.sortedKeys.length; i++) {
      assert((s.sortedKeys[i - 1] as string) < (s.sortedKeys[i] as string), 'mvcc: keys unsorted');
    }
    return s;
  }

  digest(h: number): number {
    h = fnvNumber(h, this.currentRev);
    h = fnvNumber(h, this.compactRev);
    for (const key of this.sortedKeys) {
      h = fnvString(h, key);
      for (const v of this.history.get(key) ?? []) {
        h = fnvNumber(h, v.rev);
        h = fnvNumber(h, v.sub);
        if (v.kv === null) {
          h = fnvNumber(h, -1);
          continue;
        }
        h = fnvNumber(h, v.kv.createRevision);
        h = fnvNumber(h, v.kv.version);
        h = fnvString(h, v.kv.lease.toString());
        h = fnvNumber(h, v.kv.value.length);
        h = fnvBytes(h, v.kv.value);
      }
    }
    return h;
  }

  /**
   * A hash of the key space as it stood at `target` (etcd's HashByRev, mvcc/kvstore.go), to be
   * computed in steps (KvHashJob). `target` must be in (compactRevision, revision]; the caller
   * checks that and answers etcd's errors.
   */
  hashJob(target: number): KvHashJob {
    assert(target <= this.currentRev, 'mvcc: hash of a future revision');
    return new KvHashJob(this.sortedKeys.slice(), this.history, target, this.compactRev);
  }

  private pendingWrite(): PendingWrite {
    assert(this.pending !== null, 'mvcc: write outside a write transaction');
    return this.pending;
  }

  private append(key: ByteKey, v: KeyVersion): void {
    this.sizeBytes += versionBytes(key, v);
    const versions = this.history.get(key);
    if (versions === undefined) {
      this.history.set(key, [v]);
      this.sortedKeys.splice(lowerBound(this.sortedKeys, key), 0, key);
      return;
    }
    const last = versions[versions.length - 1];
    // The txn validation forbids writing one key twice in a revision (duplicate key rule).
    assert(last === undefined || last.rev < v.rev, 'mvcc: key written twice in one revision');
    versions.push(v);
  }

  private forEachKey(span: KeySpan, f: (key: ByteKey, versions: KeyVersion[]) => void): void {
    if (span.kind === 'single') {
      const versions = this.history.get(span.key);
      if (versions) f(span.key, versions);
      return;
    }
    for (let i = lowerBound(this.sortedKeys, span.key); i < this.sortedKeys.length; i++) {
      const key = this.sortedKeys[i] as ByteKey;
      if (!spanContains(span, key)) break;
      f(key, this.history.get(key) ?? []);
    }
  }
}

/** `value` with its last byte changed (a byte added to an empty one); never in place. */
function corrupted(value: Uint8Array): Uint8Array {
  if (value.length === 0) return Uint8Array.of(0x21);
  const out = value.slice();
  out[out.length - 1] = (out[out.length - 1] as number) ^ 0x01;
  return out;
}

/** The newest version at or below `rev`. */
function versionAt(versions: readonly KeyVersion[], rev: number): KeyVersion | undefined {
  for (let i = versions.length - 1; i >= 0; i--) {
    const v = versions[i] as KeyVersion;
    if (v.rev <= rev) return v;
  }
  return undefined;
}

/**
 * A DELETE event's kv holds only the key and the delete revision (etcd's
 * server/storage/mvcc/watchable_store_txn.go).
 */
function tombstoneKv(key: Uint8Array, rev: number): KeyValue {
  return {
    key,
    createRevision: revision(0),
    modRevision: revision(rev),
    version: 0,
    value: EMPTY_BYTES,
    lease: 0n,
  };
}

function eventOf(v: KeyVersion, prev: KeyValue | null): WatchEvent {
  if (v.kv === null) {
    assert(prev !== null, 'mvcc: tombstone without a live predecessor');
    return { type: 'DELETE', kv: tombstoneKv(prev.key, v.rev), prevKv: prev };
  }
  return prev ? { type: 'PUT', kv: v.kv, prevKv: prev } : { type: 'PUT', kv: v.kv };
}

function lowerBound(keys: readonly ByteKey[], key: ByteKey): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as ByteKey) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Value bytes hashed per step at most (a step may pass it by one version). */
const HASH_STEP_BYTES_MAX = 4 * 1024 * 1024;
/** Versions looked at per step at most, however small their values. */
const HASH_STEP_VERSIONS_MAX = 50_000;

/**
 * The hash of the key space at one revision: FNV-1a over every key version written at or below
 * it, key by key in byte order, the way etcd hashes every revision of its key bucket up to the
 * requested one (mvcc/kvstore.go HashByRev). Like etcd's, it covers only what compaction keeps:
 * a version at or below the compact revision counts only if it is the newest live version of
 * its key at the target (etcd's kvindex.Keep). So two members hash alike at a revision exactly
 * when they hold the same versions there, and members with different compact revisions are not
 * comparable (etcd's corruption check compares only those with equal ones). The value is
 * tenure's, not etcd's: etcd hashes its bbolt bytes with CRC-32C.
 *
 * It runs in steps so that a large store does not hold the event loop: the keys and their
 * version arrays are taken when the job is made, and what a step reads cannot change under it
 * (versions at or below the target are never rewritten; new writes append above it; compaction
 * replaces a key's array instead of editing it).
 */
export class KvHashJob {
  private at = 0;
  private h: number;
  private readonly versions: (readonly KeyVersion[] | undefined)[];

  constructor(
    private readonly keys: readonly ByteKey[],
    history: ReadonlyMap<ByteKey, readonly KeyVersion[]>,
    readonly target: number,
    readonly compactRevision: number,
  ) {
    this.versions = keys.map((k) => history.get(k));
    this.h = fnvNumber(fnvNumber(FNV_OFFSET, target), compactRevision);
  }

  get done(): boolean {
    return this.at >= this.keys.length;
  }

  /** The hash, once `done`. */
  get hash(): number {
    assert(this.done, 'mvcc: hash read before the job is done');
    return this.h >>> 0;
  }

  /** Hash the next keys, a bounded amount of work; true when the job is done. */
  step(): boolean {
    let bytes = 0;
    let seen = 0;
    while (this.at < this.keys.length && bytes < HASH_STEP_BYTES_MAX) {
      const i = this.at++;
      const versions = this.versions[i] ?? [];
      seen += versions.length;
      bytes += this.hashKey(this.keys[i] as ByteKey, versions);
      if (seen >= HASH_STEP_VERSIONS_MAX) break;
    }
    return this.done;
  }

  /** Hash one key's versions that count at the target; the value bytes hashed. */
  private hashKey(key: ByteKey, versions: readonly KeyVersion[]): number {
    // The newest version at or below the target: the one compaction at the target would keep.
    let newest = -1;
    for (let j = versions.length - 1; j >= 0; j--) {
      if ((versions[j] as KeyVersion).rev <= this.target) {
        newest = j;
        break;
      }
    }
    let h = this.h;
    let keyed = false;
    let bytes = 0;
    for (let j = 0; j <= newest; j++) {
      const v = versions[j] as KeyVersion;
      if (v.rev <= this.compactRevision && !(j === newest && v.kv !== null)) continue;
      if (!keyed) {
        h = fnvString(h, key);
        keyed = true;
      }
      h = fnvNumber(fnvNumber(h, v.rev), v.sub);
      if (v.kv === null) {
        h = fnvNumber(h, -1);
        continue;
      }
      h = fnvNumber(fnvNumber(h, v.kv.createRevision), v.kv.version);
      h = fnvString(h, v.kv.lease.toString());
      h = fnvBytes(fnvNumber(h, v.kv.value.length), v.kv.value);
      bytes += v.kv.value.length;
    }
    this.h = h;
    return bytes;
  }
}
