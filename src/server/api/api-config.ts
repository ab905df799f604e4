// The client API's limits and timings, in one place: one typed config, each field with its
// meaning, unit, default and trade-off.
import type { Mutants } from '../../core/base/mutants.js';
import { AUTH_TOKEN_TTL_MS_DEFAULT } from '../../core/state/auth-tokens.js';
import { DEFAULT_ETCD_LIMITS } from '../../core/state/etcd-limits.js';

export interface ClientApiConfig {
  /**
   * Largest request accepted, in bytes of its protobuf encoding (etcd's `--max-request-bytes`,
   * default 1.5 MiB, etcd server/embed/config.go). Bigger requests fail with `etcdserver:
   * request is too large`. Must match the replicas' EtcdLimits.requestBytesMax.
   */
  readonly requestBytesMax: number;
  /**
   * Slack above `requestBytesMax` for gRPC's own receive limit (etcd adds 512 KiB), so a request
   * slightly over the limit gets etcd's error text rather than gRPC's generic one.
   */
  readonly grpcOverheadBytes: number;
  /**
   * A watch stream's safety-net drain interval, in ms. Applied revisions wake the stream at
   * once through the hub's change callback; this only bounds the wait if one were missed.
   * Default 1000 ms.
   */
  readonly watchDrainIntervalMs: number;
  /**
   * Interval of progress notifications to `progress_notify` watchers, in ms (etcd's
   * `--watch-progress-notify-interval`, default 10 min, minimum 100 ms).
   */
  readonly watchProgressIntervalMs: number;
  /**
   * Most incoming requests buffered per bidi stream before reading pauses (backpressure on a
   * client that sends faster than the node answers). Default 64.
   */
  readonly streamRequestsQueuedMax: number;
  /**
   * `--client-cert-auth`: with auth enabled, a call without a token runs as the CN of its
   * verified client certificate (etcd's AuthInfoFromTLS). Default false.
   */
  readonly clientCertAuth: boolean;
  /**
   * `--auth-token-ttl`, in ms: a simple token unused this long is invalid (etcd default 300 s;
   * every use renews it).
   */
  readonly authTokenTtlMs: number;
  /** `--bcrypt-cost` for hashing passwords (etcd's default and ours: 10; valid 4..31). */
  readonly bcryptCost: number;
  /**
   * `--max-connections-per-address`: client connections open at once from one remote IP
   * address. One more is destroyed as soon as it is accepted (connection-limits.ts), so one host
   * that opens sockets in a loop exhausts its own share, not the member's file descriptors.
   * etcd has no such limit; default 1000, far above what clients that share one connection per
   * endpoint (clientv3, grpc-js) open. It protects the member's descriptors only if `ulimit -n`
   * is well above it (often 1024 by default on Linux: raise it for a member with many hosts).
   */
  readonly connectionsPerAddressMax: number;
  /**
   * `--max-opening-connections`: connections accepted and not identified yet, server-wide: in
   * the TLS handshake or before their first bytes tell gRPC from the gateway. Both phases end
   * after 10 s at most; this bounds what silent sockets hold meanwhile (up to 1 MiB each of an
   * HTTP/2 opening). Default 1000.
   */
  readonly openingConnectionsMax: number;
  /**
   * `--max-concurrent-streams` (etcd's flag, default math.MaxUint32 there): HTTP/2
   * SETTINGS_MAX_CONCURRENT_STREAMS, the gRPC calls one connection may have open at once. A
   * stream over it is reset with REFUSED_STREAM by nghttp2 (even before the client acknowledged
   * the setting); clients that honour the setting (grpc-go, grpc-js) queue calls instead. Each
   * open stream may hold `streamQueuedBytesMax` of answers, so this also bounds a connection's
   * memory. Default 1000.
   */
  readonly streamsPerConnectionMax: number;
  /**
   * `--max-watches-per-connection`: watchers open at once across one connection's Watch streams
   * (and its gateway watches). One more is refused as etcd refuses a watch create: a
   * WatchResponse with created and canceled set, watch ID -1 and a cancel_reason naming this
   * limit; the stream stays open. Each watcher costs a scan of every applied revision's events.
   * Default 10,000.
   */
  readonly watchesPerConnectionMax: number;
  /**
   * `--max-lease-keepalive-streams-per-connection`: LeaseKeepAlive streams open at once on one
   * connection; one more ends at once with RESOURCE_EXHAUSTED. Leases themselves outlive
   * connections (etcd grants them to the cluster, not to a client), so the count of leases is
   * not a per-connection matter; and a keepalive stream keeps no state per lease ID (each
   * request is answered and forgotten, as in etcd's v3rpc/lease.go), so the IDs one stream
   * renews cost nothing to bound. What a connection holds is streams: clientv3 opens one per
   * Lease client. Default 100.
   */
  readonly keepAliveStreamsPerConnectionMax: number;
  /**
   * `--max-stream-queued-bytes`: answer bytes one stream queues before its writer waits for the
   * client to read (the watch, keepalive and observe loops all wait). A stream holds at most
   * this plus one message. Default 256 KiB: a watch fan-out's responses of one event-loop turn
   * still leave in one write.
   */
  readonly streamQueuedBytesMax: number;
  /**
   * `--max-connection-unsent-bytes`: gRPC answer bytes a connection may hold that its client has
   * not read. Beyond it, new calls on that connection are refused at once with
   * RESOURCE_EXHAUSTED, before their handler runs (so a refused write is never applied), until
   * the client reads. Calls already running still answer: a connection holds at most this,
   * plus `streamQueuedBytesMax` and a message per open stream, plus the answers of calls that
   * were running when it crossed (at most `streamsPerConnectionMax` of them; etcd's grpc-go
   * holds each marshalled answer the same way). Default 64 MiB.
   */
  readonly connectionUnsentBytesMax: number;
  /**
   * `--max-watch-queue-bytes`: bytes of keys and values of live events one Watch stream's hub
   * queues while its client does not read. Beyond it live events stop being queued: the
   * stream's watchers fall behind ("unsynced", as etcd's slow watchers in
   * mvcc/watchable_store.go) and are caught up from the store's history once the client reads
   * again, or cancelled with compact_revision if that history was compacted meanwhile.
   * Default 16 MiB.
   */
  readonly watchQueueBytesMax: number;
  /** How long `close()` lets calls finish before it cuts connections, in ms. Default 2000. */
  readonly shutdownGraceMs: number;
  /** Planted bugs for the simulator's mutation runs; never set in production. */
  readonly mutants?: Mutants;
}

export const DEFAULT_CLIENT_API_CONFIG: ClientApiConfig = Object.freeze({
  requestBytesMax: DEFAULT_ETCD_LIMITS.requestBytesMax,
  grpcOverheadBytes: 512 * 1024,
  watchDrainIntervalMs: 1000,
  watchProgressIntervalMs: 10 * 60 * 1000,
  streamRequestsQueuedMax: 64,
  clientCertAuth: false,
  authTokenTtlMs: AUTH_TOKEN_TTL_MS_DEFAULT,
  bcryptCost: 10,
  shutdownGraceMs: 2000,
  connectionsPerAddressMax: 1000,
  openingConnectionsMax: 1000,
  streamsPerConnectionMax: 1000,
  watchesPerConnectionMax: 10_000,
  keepAliveStreamsPerConnectionMax: 100,
  streamQueuedBytesMax: 256 * 1024,
  connectionUnsentBytesMax: 64 * 1024 * 1024,
  watchQueueBytesMax: 16 * 1024 * 1024,
});
