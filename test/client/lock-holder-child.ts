// The etcd-API lock holder of recipes-contract.ts's pause test: lease-holder-child.ts (which
// documents the protocol) on the etcd backend.
//
//   node lock-holder-child.js ENDPOINTS NAME TTL_SECONDS PAUSE_MS_MIN
process.argv.splice(2, 0, 'etcd');
await import('./lease-holder-child.js');
