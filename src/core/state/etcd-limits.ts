// Every limit of the etcd key space, in one place, with etcd's defaults (server/embed/config.go,
// and server/lease/lessor.go for lease TTLs). All replicas must use the same values: they change
// what apply decides.

export interface EtcdLimits {
  /** Most ops in one of a txn's compare/success/failure lists (`--max-txn-ops`, default 128). */
  readonly txnOpsMax: number;
  /**
   * Largest request accepted, in bytes of its protobuf encoding (`--max-request-bytes`, default
   * 1.5 MiB). Checked by the server before it proposes (ERR_REQUEST_TOO_LARGE), not in apply: the
   * log's JSON encoding is larger than the wire's, so apply cannot measure it faithfully.
   */
  readonly requestBytesMax: number;
  /**
   * Shortest lease TTL granted, in seconds: ceil(1.5 × election timeout), 2 s with the default
   * 1000 ms election timeout. Shorter requests are silently raised; a lease must outlive one
   * leader election or it would expire during every failover.
   */
  readonly leaseTtlMinSeconds: number;
  /** Longest lease TTL accepted, in seconds (etcd's 9 000 000 000). */
  readonly leaseTtlMaxSeconds: number;
  /**
   * The space quota, in bytes of stored history (`--quota-backend-bytes`, default 2 GiB). Writes
   * that would pass it fail with "database space exceeded"; compaction frees space.
   */
  readonly backendBytesMax: number;
  /**
   * Responses a watch hub queues between drains before it stops delivering live events. Watchers
   * then fall behind and are caught up from history at the next drain (or cancelled as compacted
   * if that history is gone), as etcd does with slow watchers; this bounds a stalled stream's
   * memory by the store's history instead of letting the queue grow without end.
   */
  readonly watchQueueResponsesMax: number;
  /**
   * Bytes of keys and values (prev_kv included) of the live events a watch hub queues between
   * drains, the same way: beyond it watchers fall behind and are caught up from history. The
   * response count alone would let 10,000 revisions of 1.5 MiB values pile up for a client that
   * never reads, and keep them in memory after a compaction freed them from the store. The
   * client API sets its own (`--max-watch-queue-bytes`) for Watch streams.
   */
  readonly watchQueueBytesMax: number;
  /** Revisions per catch-up watch response (etcd sends at most 1000 per response). */
  readonly watchCatchUpRevisionsMax: number;
}

export const DEFAULT_ETCD_LIMITS: EtcdLimits = Object.freeze({
  txnOpsMax: 128,
  requestBytesMax: 1.5 * 1024 * 1024,
  leaseTtlMinSeconds: 2,
  leaseTtlMaxSeconds: 9_000_000_000,
  backendBytesMax: 2 * 1024 * 1024 * 1024,
  watchQueueResponsesMax: 10_000,
  watchQueueBytesMax: 16 * 1024 * 1024,
  watchCatchUpRevisionsMax: 1000,
});
