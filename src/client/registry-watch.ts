// RegistryWatcher: the live set of a service's instances as an async iterable of views.
//
// One Range of the prefix gives the set at its header revision R; a watch of the prefix from
// R + 1 gives every later change in order, so nothing between the read and the watch is missed
// (etcd's Manager.NewWatchChannel does the same, client/v3/naming/endpoints/endpoints_impl.go).
// The watch's events are applied one revision at a time, each revision yielding the set at that
// revision and its change. When the watch ends (compaction, CompactedError; or no member for the
// watch's reconnect window) the watcher does not trust a resume point: it re-reads the whole set
// and yields what changed, as LeaderObserver does (election.ts; etcd #18163, #7815).
//
// Differences from Go's Manager watch, on purpose: Go's watch goroutine ends for good after a
// watch error (a compacted resolver then serves a frozen set); and a key whose new value does not
// decode keeps its old endpoint in Go's resolver, while here it leaves the set (and is reported).
import { sleep } from './call-options.js';
import type { Client } from './client.js';
import type { KeyValue } from './codec.js';
import { ClientClosedError, CompactedError } from './errors.js';
import { servicePrefix } from './registry-format.js';
import {
  diffSets,
  instanceOf,
  setOf,
  type Instance,
  type InstanceSet,
  type RegistryView,
  type SkippedValue,
} from './registry-view.js';
import { linkAbort } from './recipe-signal.js';
import { StateBuffer } from './state-buffer.js';
import type { WatchEvent } from './watch.js';
import './dispose.js';

export interface RegistryWatchOptions {
  /** Aborting it ends the watcher (the iteration then finishes). */
  readonly signal?: AbortSignal;
  /** Called with each skipped value as it is found (besides `view.skipped`). */
  readonly onSkipped?: (skipped: SkippedValue) => void;
}

// Named limits.
/** Views buffered for a consumer that does not keep up; beyond it they are merged into one. */
export const registryViewsBufferedMax = 256;
/** Skipped values a merged view keeps (the newest). */
const skippedKeptMax = 64;
/** Pause before re-reading after a failed read or watch, in ms. */
const resyncPauseMs = 200;

export class RegistryWatcher implements AsyncIterable<RegistryView>, AsyncDisposable {
  readonly service: string;
  readonly #client: Client;
  readonly #onSkipped: ((s: SkippedValue) => void) | undefined;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  readonly #views = new StateBuffer<RegistryView>({
    maxBuffered: registryViewsBufferedMax,
    overflow: (buffered) => this.#coalesce(buffered),
    onDeliver: (view) => (this.#delivered = view.instances),
  });
  /** The set as of the last event applied. */
  #mirror = new Map<string, Instance>();
  /** Keys whose current value is skipped, by mod revision (so a re-read does not report twice). */
  readonly #invalid = new Map<string, bigint>();
  /** The set of the last view handed to the consumer (the base of a merged view). */
  #delivered: InstanceSet = new Map();
  #current: RegistryView | undefined;
  #resyncs = 0;
  #skippedTotal = 0;
  #error: unknown;

  constructor(client: Client, service: string, options: RegistryWatchOptions = {}) {
    servicePrefix(service); // validates
    this.service = service;
    this.#client = client;
    this.#onSkipped = options.onSkipped;
    // Unlinked when the watcher ends, so a long-lived caller signal does not keep our listener.
    const unlink =
      options.signal === undefined ? () => undefined : linkAbort(options.signal, this.#stop);
    this.#done = this.#run().finally(() => {
      unlink();
      this.#views.end();
    });
  }

  /** The latest view (undefined before the first read). */
  get current(): RegistryView | undefined {
    return this.#current;
  }

  /** Full re-reads after a failed or compacted watch so far. */
  get resyncs(): number {
    return this.#resyncs;
  }

  /** Values skipped so far (each key-value counted once). */
  get skippedTotal(): number {
    return this.#skippedTotal;
  }

  /** The last failure seen (the watcher keeps retrying; for diagnostics). */
  get lastError(): unknown {
    return this.#error;
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    const pfx = servicePrefix(this.service);
    let first = true;
    while (!stop.aborted) {
      let from: bigint;
      try {
        const r = await this.#client.kv.range(pfx, { prefix: true, signal: stop });
        this.#reread(r.kvs, r.header.revision, first);
        first = false;
        from = r.header.revision + 1n;
      } catch (e) {
        if (stop.aborted || e instanceof ClientClosedError) return;
        this.#error = e;
        await sleep(resyncPauseMs, stop).catch(() => {});
        continue;
      }
      const w = this.#client.watch(pfx, { prefix: true, startRevision: from, signal: stop });
      let compacted = false;
      try {
        for await (const b of w) this.#applyBatch(b.events);
      } catch (e) {
        compacted = e instanceof CompactedError;
        this.#error = e;
      } finally {
        await w.close();
      }
      if (stop.aborted) return;
      this.#resyncs++;
      // After a compaction the re-read is the remedy; after anything else, pause first.
      if (!compacted) await sleep(resyncPauseMs, stop).catch(() => {});
    }
  }

  /** A full read at `revision`: the first snapshot, or a resync reporting what changed. */
  #reread(kvs: readonly KeyValue[], revision: bigint, first: boolean): void {
    const { instances, skipped } = setOf(this.service, kvs);
    const changes = diffSets(this.#mirror, instances);
    this.#mirror = instances;
    const fresh = skipped.filter((s) => this.#invalid.get(s.key) !== s.modRevision);
    this.#invalid.clear();
    for (const s of skipped) this.#invalid.set(s.key, s.modRevision);
    if (!first && changes.length === 0 && fresh.length === 0) return;
    this.#emit({
      revision,
      instances: new Map(instances),
      changes,
      skipped: this.#report(fresh),
      source: first ? 'snapshot' : 'resync',
    });
  }

  /** A watch batch: one view per revision in it (all events of a revision come in one batch). */
  #applyBatch(events: readonly WatchEvent[]): void {
    let i = 0;
    while (i < events.length) {
      const rev = (events[i] as WatchEvent).kv.modRevision;
      const before: InstanceSet = new Map(this.#mirror);
      const skipped: SkippedValue[] = [];
      for (; i < events.length && (events[i] as WatchEvent).kv.modRevision === rev; i++) {
        const e = events[i] as WatchEvent;
        const key = e.kv.key.toString('utf8');
        this.#invalid.delete(key);
        if (e.type === 'delete') {
          this.#mirror.delete(key);
          continue;
        }
        const r = instanceOf(this.service, e.kv);
        if ('instance' in r) {
          this.#mirror.set(key, r.instance);
        } else {
          this.#mirror.delete(key);
          this.#invalid.set(key, r.skipped.modRevision);
          skipped.push(r.skipped);
        }
      }
      const changes = diffSets(before, this.#mirror);
      if (changes.length === 0 && skipped.length === 0) continue;
      this.#emit({
        revision: rev,
        instances: new Map(this.#mirror),
        changes,
        skipped: this.#report(skipped),
        source: 'watch',
      });
    }
  }

  #report(skipped: SkippedValue[]): SkippedValue[] {
    for (const s of skipped) {
      this.#skippedTotal++;
      try {
        this.#onSkipped?.(s);
      } catch {
        // A throwing callback must not end the watcher.
      }
    }
    return skipped;
  }

  #emit(view: RegistryView): void {
    this.#current = view;
    this.#views.push(view);
  }

  /**
   * Merge everything buffered into one view from the set last delivered: still the whole set at
   * a revision, and the exact change from what the consumer saw last.
   */
  #coalesce(buffered: RegistryView[]): void {
    const last = buffered[buffered.length - 1] as RegistryView;
    const skipped = buffered.flatMap((v) => v.skipped).slice(-skippedKeptMax);
    buffered.length = 0;
    buffered.push({
      revision: last.revision,
      instances: last.instances,
      changes: diffSets(this.#delivered, last.instances),
      skipped,
      source: 'coalesced',
    });
  }

  /** Stop watching. Idempotent. */
  async close(): Promise<void> {
    this.#stop.abort(new Error('registry watcher closed'));
    await this.#done;
  }

  /** Resolves once the watcher has ended. */
  closed(): Promise<void> {
    return this.#done;
  }

  [Symbol.asyncIterator](): AsyncIterator<RegistryView> {
    return this.#views.iterator(() => this.close());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
