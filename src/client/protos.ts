// The etcd v3 wire format, from tenure's own wire-compatible .proto files (proto/README.md), loaded
// with the same proto-loader options as the server (src/server/api/protos.ts; the client may not
// import the server: imports only point down): proto field names, 64-bit integers as decimal
// strings, enums by name, defaults filled, oneofs named by a virtual field.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MethodDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_FILES = ['etcdserverpb/rpc.proto', 'mvccpb/kv.proto'];

/** Directory levels searched upwards for proto/ (dist/src/client is three below the root). */
const ROOT_SEARCH_DEPTH_MAX = 8;

function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < ROOT_SEARCH_DEPTH_MAX; i++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, 'etcdserverpb', 'rpc.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`tenure/client: proto/ not found above ${fileURLToPath(import.meta.url)}`);
}

let cached: protoLoader.PackageDefinition | undefined;

function definition(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync(PROTO_FILES, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [protoDir()],
  });
  return cached;
}

/** The methods the SDK calls, by `Service.Method`. */
export type MethodName =
  | 'KV.Range'
  | 'KV.Put'
  | 'KV.DeleteRange'
  | 'KV.Txn'
  | 'KV.Compact'
  | 'Watch.Watch'
  | 'Lease.LeaseGrant'
  | 'Lease.LeaseRevoke'
  | 'Lease.LeaseKeepAlive'
  | 'Lease.LeaseTimeToLive'
  | 'Lease.LeaseLeases'
  | 'Maintenance.Status'
  | `Auth.${AuthMethod}`;

/** The Auth service's methods (etcd 3.4's; rpc.proto, service Auth). */
export type AuthMethod =
  | 'AuthEnable'
  | 'AuthDisable'
  | 'Authenticate'
  | 'UserAdd'
  | 'UserGet'
  | 'UserList'
  | 'UserDelete'
  | 'UserChangePassword'
  | 'UserGrantRole'
  | 'UserRevokeRole'
  | 'RoleAdd'
  | 'RoleGet'
  | 'RoleList'
  | 'RoleDelete'
  | 'RoleGrantPermission'
  | 'RoleRevokePermission';

export type AnyMethod = MethodDefinition<object, Record<string, unknown>>;

/** The gRPC method definition (path and codecs) of `Service.Method` in etcdserverpb. */
export function method(name: MethodName): AnyMethod {
  const [service, rpc] = name.split('.') as [string, string];
  const svc = definition()[`etcdserverpb.${service}`];
  if (svc === undefined || 'format' in svc) throw new Error(`tenure/client: no service ${service}`);
  const m = svc[rpc];
  if (m === undefined) throw new Error(`tenure/client: no method ${name}`);
  return m as unknown as AnyMethod;
}
