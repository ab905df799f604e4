// etcdserverpb.Watch (etcd server/etcdserver/api/v3rpc/watch.go): one WatchHub per stream
// (src/core/state/watch-hub.ts does created/cancel/compacted/progress/filters/prev_kv), wired to
// the transport here. The machine publishes into the hub without telling anyone, so the stream
// drains it after every request and every `watchDrainIntervalMs`; sending awaits the transport,
// so a slow client stops the draining and the hub's own limits (`watchQueueBytesMax`) turn the
// backlog into catch-up from history. The watchers of all of one connection's streams count
// against `watchesPerConnectionMax`.
import { NO_MUTANTS, type Mutants } from '../../core/base/mutants.js';
import type { WatchCreateRequest, WatchFilter, WatchResponse } from '../../core/state/watch-hub.js';
import type { WatchEvent } from '../../core/state/kv-types.js';
import type { ClientApiConfig } from './api-config.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ApiService, BidiCall, WireObject } from './convert.js';
import {
  asMessage,
  boolField,
  bytesField,
  numberField,
  optionalBytesField,
  repeatedField,
  toProtoEvent,
  toProtoHeader,
} from './convert.js';
import {
  ERR_AUTH_OLD_REVISION,
  ERR_INVALID_AUTH_TOKEN,
  ERR_PERMISSION_DENIED,
  ERR_USER_EMPTY,
} from '../../core/state/etcd-errors.js';
import { authOn, callerOf } from './auth-identity.js';
import { watchLimitReason } from './connection-limits.js';
import { statusOf } from './status.js';

const WATCH = '/etcdserverpb.Watch/Watch';

export function watchHandlers(backend: KvBackend, config: ClientApiConfig): ApiService {
  return {
    unary: {},
    serverStream: {},
    bidi: { [WATCH]: (call) => new WatchStream(backend, config, call).run() },
  };
}

/** FilterType values are enum names; unknown numbers are ignored, as etcd ignores them. */
function filtersOf(m: WireObject): WatchFilter[] {
  return repeatedField(m, 'filters').filter(
    (f): f is WatchFilter => f === 'NOPUT' || f === 'NODELETE',
  );
}

function fromProtoWatchCreate(x: unknown, mutants: Mutants): WatchCreateRequest {
  const m = asMessage(x, 'create_request');
  const rangeEnd = optionalBytesField(m, 'range_end');
  const start = numberField(m, 'start_revision');
  return {
    key: bytesField(m, 'key'),
    ...(rangeEnd === undefined ? {} : { rangeEnd }),
    // The planted bug: a watch resumed at r starts one revision late.
    startRevision: start > 0 && mutants.has('watchResumeLate') ? start + 1 : start,
    progressNotify: boolField(m, 'progress_notify'),
    filters: filtersOf(m),
    prevKv: boolField(m, 'prev_kv'),
    watchId: numberField(m, 'watch_id'),
  };
}

/** Bytes an event adds to an encoded response, roughly: its payload plus field overhead. */
function eventBytes(e: WatchEvent): number {
  const kvBytes = (kv: WatchEvent['kv']): number => kv.key.length + kv.value.length + 48;
  return kvBytes(e.kv) + (e.prevKv === undefined ? 0 : kvBytes(e.prevKv));
}

/**
 * Split a response for a watcher created with `fragment` (etcd's `sendFragments` in
 * server/etcdserver/api/v3rpc/watch.go): when it is larger than the request limit and has more
 * than one event, into pieces under the limit (at least one event each); every piece but the
 * last is marked `fragment`.
 */
export function fragmentResponse(
  r: WatchResponse,
  bytesMax: number,
): { readonly response: WatchResponse; readonly fragment: boolean }[] {
  const total = r.events.reduce((n, e) => n + eventBytes(e), 0);
  if (r.events.length < 2 || total <= bytesMax) return [{ response: r, fragment: false }];
  const pieces: WatchEvent[][] = [];
  let piece: WatchEvent[] = [];
  let size = 0;
  for (const e of r.events) {
    const b = eventBytes(e);
    if (piece.length > 0 && size + b > bytesMax) {
      pieces.push(piece);
      piece = [];
      size = 0;
    }
    piece.push(e);
    size += b;
  }
  pieces.push(piece);
  return pieces.map((events, i) => ({
    response: { ...r, events },
    fragment: i < pieces.length - 1,
  }));
}

/** gRPC's code names as grpc-go's Status.Error text spells them (codes/code_string.go). */
const GO_CODE_NAMES: Readonly<Record<string, string>> = {
  InvalidArgument: 'InvalidArgument',
  PermissionDenied: 'PermissionDenied',
  Unauthenticated: 'Unauthenticated',
  Unavailable: 'Unavailable',
  FailedPrecondition: 'FailedPrecondition',
  Canceled: 'Canceled',
  DeadlineExceeded: 'DeadlineExceeded',
};

/**
 * etcd 3.4 puts the gRPC error's whole text in an auth refusal's cancel_reason (v3rpc/watch.go
 * sends rpctypes.ErrGRPC*.Error()), e.g. `rpc error: code = PermissionDenied desc = etcdserver:
 * permission denied`; clients show it as it is.
 */
function cancelReason(e: { readonly code: string; readonly message: string }): string {
  return `rpc error: code = ${GO_CODE_NAMES[e.code] ?? e.code} desc = ${e.message}`;
}

class WatchStream {
  private readonly hub;
  /** Watch IDs created with `fragment = true`. */
  private readonly fragmenting = new Set<number>();
  private wake: (() => void) | undefined;
  private failure: { readonly error: unknown } | undefined;
  /** This stream's watchers as counted in its connection's `watches`. */
  private counted = 0;

  constructor(
    private readonly backend: KvBackend,
    private readonly config: ClientApiConfig,
    private readonly call: BidiCall,
  ) {
    this.hub = backend.machine.openWatchHub(config.watchQueueBytesMax);
    // Applied revisions wake the sender at once; the drain interval is only a safety net.
    this.hub.onChange = () => this.poke();
  }

  /**
   * Bring the connection's watch count up to date with this hub's watchers, which creates,
   * cancels and compaction (the hub cancels a compacted watcher itself) change.
   */
  private recount(): void {
    const connection = this.call.info.connection;
    if (connection === undefined) return;
    connection.watches += this.hub.size - this.counted;
    this.counted = this.hub.size;
  }

  async run(): Promise<void> {
    const signal = this.call.info.signal;
    const onAbort = (): void => this.poke();
    signal.addEventListener('abort', onAbort);
    const stopProgress = this.backend.clock.every(this.config.watchProgressIntervalMs, () => {
      this.hub.progressTick();
      this.poke();
    });
    // The reader runs beside the sender; its failure is picked up by the loop below.
    const reader = this.readRequests().catch((error: unknown) => {
      this.failure = { error };
      this.poke();
    });
    this.call.info.connection?.watchQueues.add(this.hub);
    try {
      while (!signal.aborted) {
        if (this.failure !== undefined) throw this.failure.error;
        const responses = this.hub.drain();
        this.recount();
        for (const r of responses) await this.sendResponse(r);
        await this.idle(this.config.watchDrainIntervalMs);
      }
    } finally {
      stopProgress();
      signal.removeEventListener('abort', onAbort);
      this.backend.machine.closeWatchHub(this.hub);
      await reader;
      const connection = this.call.info.connection;
      if (connection !== undefined) {
        connection.watchQueues.delete(this.hub);
        connection.watches -= this.counted;
        this.counted = 0;
      }
    }
  }

  /** Apply each request to the hub; its responses are queued there and sent by the loop. */
  private async readRequests(): Promise<void> {
    for await (const req of this.call.requests) {
      const m = asMessage(req);
      if (m['create_request'] != null) {
        const create = fromProtoWatchCreate(m['create_request'], this.config.mutants ?? NO_MUTANTS);
        const denied = authOn(this.backend) ? await this.authDenial(create) : null;
        if (denied !== null) {
          this.hub.deny(denied);
          this.poke();
          continue;
        }
        const connection = this.call.info.connection;
        this.recount();
        if (connection !== undefined && connection.watches >= this.config.watchesPerConnectionMax) {
          this.hub.deny(watchLimitReason(this.config.watchesPerConnectionMax));
          this.poke();
          continue;
        }
        const id = this.hub.create(create);
        this.recount();
        if (boolField(asMessage(m['create_request']), 'fragment')) this.fragmenting.add(id);
      } else if (m['cancel_request'] != null) {
        const id = numberField(asMessage(m['cancel_request'], 'cancel_request'), 'watch_id');
        this.hub.cancel(id);
        this.recount();
      } else if (m['progress_request'] != null) {
        this.hub.requestProgress();
      }
      this.poke();
    }
  }

  /**
   * READ on the watched range, checked once at creation as etcd does (later permission changes
   * do not cancel a watch). The range is the one asked for: etcd 3.4 checked a from-key watch
   * after rewriting its "\0" end away, i.e. as one key; 3.5 fixed that, and so do we. A refusal
   * cancels the watch, not the stream (etcd 3.4 v3rpc/watch.go).
   */
  private async authDenial(create: WatchCreateRequest): Promise<string | null> {
    const auth = this.backend.machine.auth;
    if (!auth.enabled) return null;
    let as;
    try {
      as = await callerOf(this.backend, this.call.info);
    } catch (e) {
      const status = statusOf(e);
      if (status === null) throw e;
      return cancelReason(status);
    }
    const e = auth.checkKeys(as, 'read', create.key, create.rangeEnd);
    if (e === null) return null;
    // etcd names only these three; any other refusal reads as permission denied.
    const named = [ERR_USER_EMPTY, ERR_AUTH_OLD_REVISION, ERR_INVALID_AUTH_TOKEN];
    return cancelReason(named.includes(e) ? e : ERR_PERMISSION_DENIED);
  }

  private async sendResponse(r: WatchResponse): Promise<void> {
    if (r.canceled) this.fragmenting.delete(r.watchId);
    const pieces = this.fragmenting.has(r.watchId)
      ? fragmentResponse(r, this.config.requestBytesMax)
      : [{ response: r, fragment: false }];
    for (const { response, fragment } of pieces) {
      await this.call.send({
        header: toProtoHeader(this.backend, response.header.revision),
        watch_id: String(response.watchId),
        created: response.created,
        canceled: response.canceled,
        compact_revision: String(response.compactRevision),
        cancel_reason: response.cancelReason,
        fragment,
        events: response.events.map(toProtoEvent),
      });
    }
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Wait for a request, an abort or `ms` to pass, whichever is first. */
  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        cancel();
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const cancel = this.backend.clock.after(ms, done);
      this.wake = done;
      if (this.call.info.signal.aborted || this.failure !== undefined) done();
    });
  }
}
