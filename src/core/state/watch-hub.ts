// The watch fan-out for one watch stream (etcd's server/etcdserver/api/v3rpc/watch.go and
// server/storage/mvcc/watchable_store.go), as a pure data structure: the machine publishes each
// revision's events into it, and the server drains the queued responses and sends them. A watcher
// that starts in the past is caught up from the store's history at once. When the queue is full
// (the stream is slow: `watchQueueResponsesMax` responses or `watchQueueBytesMax` bytes) live
// events are not queued: watchers fall behind ("unsynced") and are caught up from history at the
// next drain, or cancelled as compacted if it is gone.
import { NO_MUTANTS, type Mutants } from '../base/mutants.js';
import { assert } from '../base/assert.js';
import type { Revision } from '../base/units.js';
import { revision } from '../base/units.js';
import {
  WATCH_CANCEL_COMPACTED,
  WATCH_CANCEL_DUPLICATE_ID,
  WATCH_CANCEL_EMPTY_RANGE,
} from './etcd-errors.js';
import type { EtcdLimits } from './etcd-limits.js';
import { DEFAULT_ETCD_LIMITS } from './etcd-limits.js';
import type { KeySpan } from './key-range.js';
import { keySpan, spanContains, spanIsEmpty, toByteKey } from './key-range.js';
import type { ResponseHeader, WatchEvent } from './kv-types.js';

/** What a hub reads from the key space: the revisions and the history of changes. */
export interface WatchSource {
  readonly revision: Revision;
  readonly compactRevision: Revision;
  eventsBetween(span: KeySpan, fromRev: number, toRev: number): WatchEvent[];
}

export type WatchFilter = 'NOPUT' | 'NODELETE';

export interface WatchCreateRequest {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array;
  /** 0 (default) = from current+1; ≤ current replays history; negative is refused as compacted. */
  readonly startRevision?: number;
  readonly progressNotify?: boolean;
  readonly filters?: readonly WatchFilter[];
  readonly prevKv?: boolean;
  /** 0 (default) = let the hub assign one. */
  readonly watchId?: number;
}

/** A WatchResponse with proto3 defaults spelled out. */
export interface WatchResponse {
  readonly header: ResponseHeader;
  readonly watchId: number;
  readonly created: boolean;
  readonly canceled: boolean;
  readonly compactRevision: number;
  readonly cancelReason: string;
  readonly events: readonly WatchEvent[];
}

/** The watch ID of responses that belong to no watcher (refused creates, progress). */
export const INVALID_WATCH_ID = -1;

interface Watcher {
  readonly id: number;
  readonly span: KeySpan;
  /** The next revision whose events this watcher needs. */
  nextRev: number;
  readonly prevKv: boolean;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  readonly progressNotify: boolean;
  /** Whether events were queued since the last progress tick. */
  sentSinceTick: boolean;
}

/** What an event holds beyond shared structure: its keys and values. */
function eventBytes(e: WatchEvent): number {
  const kv = e.kv.key.length + e.kv.value.length;
  return e.prevKv === undefined ? kv : kv + e.prevKv.key.length + e.prevKv.value.length;
}

export class WatchHub {
  private readonly watchers = new Map<number, Watcher>();
  private queue: WatchResponse[] = [];
  /** Bytes of keys and values in `queue`'s events (eventBytes). */
  private queueBytes = 0;
  private nextAutoId = 0;

  constructor(
    private readonly source: WatchSource,
    private readonly limits: EtcdLimits = DEFAULT_ETCD_LIMITS,
    /** Planted bugs for the simulator's mutation runs; never set in production. */
    private readonly mutants: Mutants = NO_MUTANTS,
  ) {}

  /** The number of live watchers. */
  get size(): number {
    return this.watchers.size;
  }

  /** Bytes of keys and values in the queued responses' events. */
  get queuedBytes(): number {
    return this.queueBytes;
  }

  /** Create a watcher; returns its ID, or INVALID_WATCH_ID when refused (a response says why). */
  create(req: WatchCreateRequest): number {
    // An empty key means "\0", so an empty key with range_end "\0" watches every key.
    const key = req.key.length === 0 ? new Uint8Array([0]) : req.key;
    const span = keySpan(key, req.rangeEnd);
    const start = req.startRevision ?? 0;
    if (spanIsEmpty(span)) return this.refuse(WATCH_CANCEL_EMPTY_RANGE);
    if (start < 0) return this.refuse(WATCH_CANCEL_COMPACTED);
    let id = req.watchId ?? 0;
    if (id !== 0 && this.watchers.has(id)) return this.refuse(WATCH_CANCEL_DUPLICATE_ID);
    if (id === 0) {
      while (this.watchers.has(this.nextAutoId)) this.nextAutoId++;
      id = this.nextAutoId++;
    }
    const filters = req.filters ?? [];
    const w: Watcher = {
      id,
      span,
      nextRev: start === 0 ? this.source.revision + 1 : start,
      prevKv: req.prevKv === true,
      noPut: filters.includes('NOPUT'),
      noDelete: filters.includes('NODELETE'),
      progressNotify: req.progressNotify === true,
      sentSinceTick: false,
    };
    this.watchers.set(id, w);
    this.push({ watchId: id, created: true });
    this.catchUp(w);
    return id;
  }

  /** Cancel a watcher; an unknown ID gets no response. */
  cancel(id: number): boolean {
    if (!this.watchers.delete(id)) return false;
    this.push({ watchId: id, canceled: true });
    return true;
  }

  /**
   * Called after every publish and resync, so the owner (a stream, a server-side wait) drains
   * at once instead of polling. It runs inside apply: it must only schedule work, never throw.
   */
  onChange: (() => void) | undefined;

  /** Deliver one applied revision's events to every watcher that needs them. */
  publish(rev: Revision, events: readonly WatchEvent[]): void {
    this.publishInto(rev, events);
    this.onChange?.();
  }

  private publishInto(rev: Revision, events: readonly WatchEvent[]): void {
    assert(rev === this.source.revision, 'watch: publish of a revision that is not current');
    // A full queue: leave every watcher behind; drain() catches them up from history.
    if (this.queue.length >= this.limits.watchQueueResponsesMax) return;
    if (this.queueBytes >= this.limits.watchQueueBytesMax) return;
    for (const w of [...this.watchers.values()]) {
      if (w.nextRev > rev) continue;
      if (w.nextRev < rev) {
        this.catchUp(w);
        continue;
      }
      const mine = this.select(w, events);
      // The planted bug: the first of several events of a revision is lost.
      if (this.mutants.has('watchDropsFirstEvent') && mine.length > 1) mine.shift();
      if (mine.length > 0) this.push({ watchId: w.id, events: mine }, rev);
      w.nextRev = rev + 1;
    }
  }

  /** After the source's state was replaced (a snapshot restore), bring every watcher up to date. */
  resync(): void {
    for (const w of [...this.watchers.values()]) this.catchUp(w);
    this.onChange?.();
  }

  /**
   * A progress request. If every watcher is synced, one response with watch ID -1 and the
   * current revision promises that later events are newer; otherwise the request is dropped
   * (returns false) and the client must ask again, as etcd does since its 2024 fix.
   */
  requestProgress(): boolean {
    if (!this.allSynced()) return false;
    this.push({ watchId: INVALID_WATCH_ID });
    return true;
  }

  /** The periodic progress notification: an empty response to each idle progress_notify watcher. */
  progressTick(): void {
    const current = this.source.revision;
    for (const w of this.watchers.values()) {
      const synced = w.nextRev > current;
      if (w.progressNotify && !w.sentSinceTick && synced) this.push({ watchId: w.id });
      w.sentSinceTick = false;
    }
  }

  /** Take every queued response, oldest first, after catching up watchers that fell behind. */
  drain(): WatchResponse[] {
    for (const w of [...this.watchers.values()]) this.catchUp(w);
    const out = this.queue;
    this.queue = [];
    this.queueBytes = 0;
    return out;
  }

  private allSynced(): boolean {
    const current = this.source.revision;
    for (const w of this.watchers.values()) if (w.nextRev <= current) return false;
    return true;
  }

  /** Refuse a create the hub never saw (the API layer's permission check). */
  deny(reason: string): void {
    this.refuse(reason);
  }

  private refuse(reason: string): number {
    this.push({ watchId: INVALID_WATCH_ID, created: true, canceled: true, cancelReason: reason });
    return INVALID_WATCH_ID;
  }

  /**
   * Replay history from the watcher's next revision to the current one, in responses of at most
   * `watchCatchUpRevisionsMax` revisions; or cancel it if that history is compacted.
   */
  private catchUp(w: Watcher): void {
    const current = this.source.revision;
    if (w.nextRev > current) return;
    const compactRev = this.source.compactRevision;
    if (w.nextRev < compactRev) {
      this.watchers.delete(w.id);
      this.push({ watchId: w.id, canceled: true, compactRevision: compactRev });
      return;
    }
    const events = this.select(w, this.source.eventsBetween(w.span, w.nextRev, current));
    let batch: WatchEvent[] = [];
    let revisions = 0;
    for (const e of events) {
      const last = batch[batch.length - 1];
      if (last === undefined || last.kv.modRevision !== e.kv.modRevision) revisions++;
      if (revisions > this.limits.watchCatchUpRevisionsMax) {
        this.push({ watchId: w.id, events: batch });
        batch = [];
        revisions = 1;
      }
      batch.push(e);
    }
    if (batch.length > 0) this.push({ watchId: w.id, events: batch });
    w.nextRev = current + 1;
  }

  private select(w: Watcher, events: readonly WatchEvent[]): WatchEvent[] {
    const out: WatchEvent[] = [];
    for (const e of events) {
      if (!spanContains(w.span, toByteKey(e.kv.key))) continue;
      if (e.type === 'PUT' ? w.noPut : w.noDelete) continue;
      if (w.prevKv || e.prevKv === undefined) out.push(e);
      else out.push({ type: e.type, kv: e.kv });
    }
    return out;
  }

  private push(r: Partial<WatchResponse> & { watchId: number }, rev?: Revision): void {
    if (r.events !== undefined && r.events.length > 0) {
      const w = this.watchers.get(r.watchId);
      if (w) w.sentSinceTick = true;
      for (const e of r.events) this.queueBytes += eventBytes(e);
    }
    this.queue.push({
      header: { revision: rev ?? revision(this.source.revision) },
      created: false,
      canceled: false,
      compactRevision: 0,
      cancelReason: '',
      events: [],
      ...r,
    });
  }
}
