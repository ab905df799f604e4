// The lease contract's factory for the etcd API (a tenure or etcd 3.4 cluster): one client and
// session per contender, the SDK's Lock.
import { Lock, connect } from '../../src/client/index.js';
import { startCluster, type BackendKind, type Cluster } from '../cluster/cluster.js';
import type { LeaseBackendFactory } from './lease-contract.js';

export function etcdApiFactory(kind: BackendKind): LeaseBackendFactory {
  let cluster: Cluster | undefined;
  const endpoints = (): string[] => [...(cluster?.endpoints ?? [])];
  return {
    label: kind,
    start: async () => {
      cluster = await startCluster({ kind, size: 3 });
    },
    stop: async () => {
      await cluster?.stop();
    },
    contender: async (ttlSeconds) => {
      const client = await connect({ endpoints: endpoints() });
      const session = await client.session({ ttlSeconds });
      return {
        session,
        acquire: (name, options) => new Lock(client, session, name).acquire(options),
        // The holder is the oldest contender key under `name/` (recipe-keys.ts).
        holderToken: async (name) => {
          const r = await client.kv.range(`${name}/`, { prefix: true });
          const revisions = r.kvs.map((kv) => kv.createRevision).sort((a, b) => (a < b ? -1 : 1));
          return revisions[0] ?? null;
        },
        close: async () => {
          await session.close().catch(() => undefined);
          await client.close();
        },
      };
    },
    childArgs: () => ['etcd', endpoints().join(',')],
  };
}
