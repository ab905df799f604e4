// Where tenure's .proto files are and how they are loaded (proto/README.md). The code runs from
// dist/src/server/api/ after a build and from src/ under a loader, so the repository root is
// found by walking up to the directory that holds proto/etcdserverpb/rpc.proto.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';

export const PROTO_FILES: readonly string[] = [
  'etcdserverpb/rpc.proto',
  'mvccpb/kv.proto',
  'v3electionpb/v3election.proto',
  'v3lockpb/v3lock.proto',
  'grpc/health/v1/health.proto',
];

/** Directory levels searched upwards for proto/ (dist/src/server/api is four below the root). */
const ROOT_SEARCH_DEPTH_MAX = 8;

export function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < ROOT_SEARCH_DEPTH_MAX; i++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, 'etcdserverpb', 'rpc.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`tenure: proto/ not found above ${fileURLToPath(import.meta.url)}`);
}

/**
 * proto-loader options shared by the gRPC server, the gateway and the tests: proto field names
 * (the gateway's JSON uses them), 64-bit integers as decimal strings, enums by name, defaults
 * filled, oneofs named by a virtual field.
 */
export function loaderOptions(dir: string): protoLoader.Options {
  return {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [dir],
  };
}

let cached: protoLoader.PackageDefinition | undefined;

/** The package definition of every service (loaded once per process: it is immutable). */
export function packageDefinition(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync([...PROTO_FILES], loaderOptions(protoDir()));
  return cached;
}

/** A service's methods, or throws if the name is not a service of the protos. */
export function serviceDefinition(fullName: string): protoLoader.ServiceDefinition {
  const def = packageDefinition()[fullName];
  if (def === undefined || 'format' in def) throw new Error(`tenure: no service ${fullName}`);
  return def;
}
