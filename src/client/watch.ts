// Watch (etcd's rpc.proto, service Watch): one bidirectional stream per watcher, reconnected on
// failure.
//
// Resume rule (microsoft/etcd3's watch.ts resumes from the header revision and can skip events):
// after a reconnect the watch is created again with start_revision = the last *received* event's
// mod_revision + 1, or the revision after a progress notification (which promises that every later
// event is newer: rpc.proto, ResponseHeader.revision), or — before anything arrived — the start
// revision asked for (for "from now" watches: the created response's header revision + 1, which is
// exactly where a "now" watch starts). It is never taken from the header of an event response: a
// catching-up watcher's header revision can be ahead of its last event, and resuming from it would
// skip events. All events of one revision arrive in one response, so resuming after the last one
// neither skips nor repeats; as a guard, an event older than the resume point is dropped rather
// than delivered twice.
//
// Compaction ends the watch with a CompactedError carrying the compact revision (rpc.proto,
// WatchResponse.compact_revision); the caller must re-read and watch again from that read's
// revision + 1.
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { sleep } from './call-options.js';
import {
  decodeHeader,
  decodeKeyValue,
  decodeOptionalKeyValue,
  int64,
  rangeEnd,
  rangeEndField,
  toBuffer,
  type Bytes,
  type KeyRangeOptions,
  type KeyValue,
  type ResponseHeader,
  type WireObject,
} from './codec.js';
import type { Connection } from './connection.js';
import {
  AuthError,
  ClientClosedError,
  CompactedError,
  EtcdError,
  InvalidArgumentError,
  UnavailableError,
  errorFromGrpc,
  errorFromMessage,
  isGrpcFailure,
  isTokenRefusal,
} from './errors.js';
import { AsyncQueue } from '../core/base/async-queue.js';
import './dispose.js';

export interface WatchOptions extends KeyRangeOptions {
  /** First revision to report (inclusive). Absent: changes after the watch is created ("now"). */
  readonly startRevision?: bigint;
  /** Include each event's previous KeyValue (when not compacted away). */
  readonly prevKv?: boolean;
  /** Server-side filters. */
  readonly noPut?: boolean;
  readonly noDelete?: boolean;
  /** Ask for periodic progress notifications (event-less batches with `progress: true`). */
  readonly progressNotify?: boolean;
  /** Aborting it closes the watcher (the iterator then finishes without an error). */
  readonly signal?: AbortSignal;
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  /** For a delete: only `key` and `modRevision` (the delete's revision) are set (mvccpb Event). */
  readonly kv: KeyValue;
  readonly prevKv: KeyValue | undefined;
}

export interface WatchBatch {
  /** Events in revision order; empty for a progress notification. */
  readonly events: readonly WatchEvent[];
  readonly header: ResponseHeader;
  /** An event-less progress notification: nothing at or below header.revision is still to come. */
  readonly progress: boolean;
}

// Named limits.
/** Batches buffered for a slow consumer before the stream is paused (gRPC flow control). */
const watchBatchesBufferedMax = 64;
/** Reconnect backoff: first wait, doubled per consecutive failure, up to the max. */
const reconnectBackoffMsMin = 50;
const reconnectBackoffMsMax = 2_000;
/** The watch fails with UnavailableError after this long without a working stream. */
const reconnectWindowMs = 60_000;

type Stream = ClientDuplexStream<object, WireObject>;

function decodeEvent(w: WireObject): WatchEvent {
  return {
    type: w.type === 'DELETE' ? 'delete' : 'put',
    kv: decodeKeyValue(w.kv),
    prevKv: decodeOptionalKeyValue(w.prev_kv),
  };
}

/** An open watch: an AsyncIterable of event batches, resumed across member failures. */
export class Watcher implements AsyncIterable<WatchBatch>, AsyncDisposable {
  readonly #connection: Connection;
  readonly #key: Buffer;
  readonly #options: WatchOptions;
  readonly #stop = new AbortController();
  readonly #batches: AsyncQueue<WatchBatch>;
  readonly #done: Promise<void>;
  #nextRevision: bigint | undefined;
  #endpoint: string | undefined;
  #stream: Stream | undefined;
  #error: unknown;
  #created!: () => void;
  readonly #ready: Promise<void>;
  #reconnects = 0;

  constructor(connection: Connection, key: Bytes, options: WatchOptions) {
    this.#connection = connection;
    this.#key = toBuffer(key);
    this.#options = options;
    rangeEnd(this.#key, options); // validates the range options now, not in the loop
    this.#nextRevision =
      options.startRevision !== undefined && options.startRevision > 0n
        ? options.startRevision
        : undefined;
    this.#batches = new AsyncQueue({
      onDrain: () => {
        if (this.#batches.size < watchBatchesBufferedMax) this.#stream?.resume();
      },
      onReturn: () => this.#stop.abort(new Error('watch closed')),
    });
    this.#ready = new Promise((resolve) => (this.#created = resolve));
    const signal = options.signal;
    if (signal?.aborted) this.#stop.abort(signal.reason);
    const onAbort = (): void => this.#stop.abort(signal?.reason);
    const onClosed = (): void => this.#stop.abort(new Error('closed'));
    signal?.addEventListener('abort', onAbort, { once: true });
    connection.closedSignal.addEventListener('abort', onClosed, { once: true });
    // Listeners go when the watch ends, so many watchers on one client do not pile them up.
    this.#done = this.#run().finally(() => {
      signal?.removeEventListener('abort', onAbort);
      connection.closedSignal.removeEventListener('abort', onClosed);
    });
  }

  /** The endpoint of the current stream (undefined before the first one is created). */
  get endpoint(): string | undefined {
    return this.#endpoint;
  }

  /** The revision a reconnect would start from (undefined: not known yet, "now"). */
  get nextRevision(): bigint | undefined {
    return this.#nextRevision;
  }

  /** Streams re-created after a failure so far. */
  get reconnects(): number {
    return this.#reconnects;
  }

  /** Resolves once the server has created the watch (or the watcher has ended). */
  ready(): Promise<void> {
    return Promise.race([this.#ready, this.#done]);
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    let failures = 0;
    let healthySinceMs = performance.now();
    let token: string | undefined;
    // A create refused for its token (etcd 3.4 cancels it with `invalid auth token` as the
    // reason: api/v3rpc/watch.go) is made again once with a fresh token; refused again, the watch
    // ends with the refusal. `stale` is the refused token until a fresh one has been obtained.
    let stale: { readonly token: string | undefined } | undefined;
    let reauthenticated = false;
    while (!stop.aborted) {
      const endpoint = this.#connection.endpoints.preferred;
      try {
        token =
          stale === undefined
            ? await this.#connection.token(stop)
            : await this.#connection.refreshToken(stale.token, stop);
        stale = undefined;
        await this.#stream1(endpoint, token, () => {
          failures = 0;
          healthySinceMs = performance.now();
          reauthenticated = false;
        });
      } catch (e) {
        if (stop.aborted) break;
        if (this.#connection.tokens !== undefined && !reauthenticated && isTokenRefusal(e)) {
          reauthenticated = true;
          stale = { token };
          continue;
        }
        // A watch is a read: re-creating it elsewhere is always safe. Only answers that would be
        // the same from any member end it.
        // A closed client answers nothing ever again: retrying would loop until the window ends.
        const fatal =
          e instanceof ClientClosedError ||
          e instanceof CompactedError ||
          e instanceof InvalidArgumentError ||
          e instanceof AuthError ||
          !(e instanceof EtcdError);
        if (fatal) {
          this.#fail(e);
          return;
        }
        this.#connection.endpoints.failed(endpoint);
        if (performance.now() - healthySinceMs > reconnectWindowMs) {
          this.#fail(
            new UnavailableError(
              'UNAVAILABLE',
              `watch: no member answered for ${reconnectWindowMs} ms`,
              {
                cause: e,
              },
            ),
          );
          return;
        }
        const waitMs = Math.min(reconnectBackoffMsMax, reconnectBackoffMsMin * 2 ** failures);
        failures++;
        this.#reconnects++;
        try {
          await sleep(waitMs, stop);
        } catch {
          break;
        }
      }
    }
    this.#batches.end();
  }

  #fail(e: unknown): void {
    this.#error = e;
    this.#batches.end(e instanceof Error ? e : new Error(String(e)));
  }

  /** One stream's life; rejects with the reason it ended (an EtcdError), never resolves. */
  #stream1(endpoint: string, token: string | undefined, healthy: () => void): Promise<void> {
    return new Promise<void>((_resolve, reject) => {
      const stop = this.#stop.signal;
      const call = this.#connection.bidi('Watch.Watch', endpoint, true, token);
      this.#stream = call;
      let done = false;
      const finish = (e: Error): void => {
        if (done) return;
        done = true;
        stop.removeEventListener('abort', onStop);
        if (this.#stream === call) this.#stream = undefined;
        call.cancel();
        reject(e);
      };
      const onStop = (): void => finish(stop.reason as Error);
      stop.addEventListener('abort', onStop, { once: true });
      call.on('data', (w: WireObject) => {
        try {
          this.#onResponse(w, endpoint, healthy, call);
        } catch (e) {
          finish(e as Error);
        }
      });
      call.on('error', (e: Error) => finish(isGrpcFailure(e) ? errorFromGrpc(e, endpoint) : e));
      call.on('end', () =>
        finish(new UnavailableError('UNAVAILABLE', `watch stream to ${endpoint} ended`)),
      );
      const o = this.#options;
      const filters = [
        ...(o.noPut === true ? ['NOPUT'] : []),
        ...(o.noDelete === true ? ['NODELETE'] : []),
      ];
      call.write({
        create_request: {
          key: this.#key.length === 0 ? Buffer.from([0]) : this.#key,
          ...rangeEndField(this.#key, o),
          start_revision: `${this.#nextRevision ?? 0n}`,
          progress_notify: o.progressNotify ?? false,
          filters,
          prev_kv: o.prevKv ?? false,
        },
      });
    });
  }

  #onResponse(w: WireObject, endpoint: string, healthy: () => void, call: Stream): void {
    const header = decodeHeader(w.header);
    const reason = typeof w.cancel_reason === 'string' ? w.cancel_reason : '';
    const compactRevision = int64(w.compact_revision);
    if (w.canceled === true) {
      if (compactRevision > 0n) {
        throw new CompactedError(
          `watch: revision ${this.#nextRevision ?? 0n} has been compacted (compact revision ${compactRevision})`,
          compactRevision,
          { endpoint },
        );
      }
      if (reason !== '') throw errorFromMessage(reason, undefined, { endpoint });
      throw new UnavailableError('UNAVAILABLE', `watch canceled by ${endpoint}`, { endpoint });
    }
    if (w.created === true) {
      this.#endpoint = endpoint;
      healthy();
      // A "now" watch starts right after the creation revision (rpc.proto, start_revision).
      this.#nextRevision ??= header.revision + 1n;
      this.#created();
      return;
    }
    const wire = Array.isArray(w.events) ? (w.events as WireObject[]) : [];
    const from = this.#nextRevision ?? 0n;
    const events = wire.map(decodeEvent).filter((e) => e.kv.modRevision >= from);
    if (wire.length === 0) {
      // A progress notification: every later event is above header.revision.
      if (header.revision + 1n > from) this.#nextRevision = header.revision + 1n;
      this.#batches.push({ events: [], header, progress: true });
    } else if (events.length > 0) {
      const last = events[events.length - 1] as WatchEvent;
      this.#nextRevision = last.kv.modRevision + 1n;
      this.#batches.push({ events, header, progress: false });
    }
    if (this.#batches.size >= watchBatchesBufferedMax) call.pause();
  }

  /** Resolves when the watcher has ended: undefined if closed, else the error that ended it. */
  async closed(): Promise<unknown> {
    await this.#done;
    return this.#error;
  }

  /** Stop watching. Batches already received can still be read. Idempotent. */
  async close(): Promise<void> {
    this.#stop.abort(new Error('watch closed'));
    await this.#done;
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    return this.#batches[Symbol.asyncIterator]();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
