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
});
