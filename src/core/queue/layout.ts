// The key layout of etcd's lock and election recipes (etcd client/v3/concurrency: NewMutex in
// mutex.go, NewElection and Campaign in election.go): a lock or election named `name` queues its
// contenders under the prefix `name + "/"`, each as the one key `name + "/" + hex(lease)` attached
// to that lease, and the queue's order is the order of those keys' create revisions. Keeping it
// byte-for-byte is what lets `etcdctl lock|elect`, Go's concurrency.Mutex/Election, tenure's
// v3lock/v3election services (src/server/api) and the SDK (src/client) queue on one name together.

const SLASH = 0x2f;
const utf8 = new TextEncoder();

/** The queue's prefix: NewMutex and NewElection store `pfx + "/"`. */
export function queuePrefix(name: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(name.length + 1);
  prefix.set(name);
  prefix[name.length] = SLASH;
  return prefix;
}

/**
 * A session's key in the queue: the prefix and the lease ID in lowercase hex, as Go's `%x`
 * prints an int64 (`fmt.Sprintf("%s%x", pfx, lease)`: no padding, no `0x`, and a negative ID
 * keeps its minus sign).
 */
export function waiterKey(prefix: Uint8Array, lease: bigint): Uint8Array {
  const hex = utf8.encode(lease.toString(16));
  const key = new Uint8Array(prefix.length + hex.length);
  key.set(prefix);
  key.set(hex, prefix.length);
  return key;
}
