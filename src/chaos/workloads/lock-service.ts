// The etcd Lock service (v3lockpb.Lock: Lock and Unlock; etcd server/etcdserver/api/v3lock), called
// over gRPC with the project's own .proto files (proto/v3lockpb), since the SDK offers the lock
// only as its own recipe (client/lock.ts), and the harness may not import the server's loader
// (imports point down). Loaded with the server's options (server/api/protos.ts). One channel per
// member; the caller picks the member of each call, so that a client stays on the member it uses
// until that member fails it, as a Go client pinned to one endpoint would (a holder on a cut-off
// leader is the case worth seeing).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

type Message = Record<string, unknown>;

/** Directory levels searched upwards for proto/ (dist/src/chaos/workloads is four below). */
const rootSearchDepthMax = 8;

function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < rootSearchDepthMax; i++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, 'v3lockpb', 'v3lock.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`chaos: proto/ not found above ${fileURLToPath(import.meta.url)}`);
}

let service: protoLoader.ServiceDefinition | undefined;

function lockService(): protoLoader.ServiceDefinition {
  if (service !== undefined) return service;
  const def = protoLoader.loadSync(['v3lockpb/v3lock.proto'], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [protoDir()],
  })['v3lockpb.Lock'];
  if (def === undefined || 'format' in def) throw new Error('chaos: no service v3lockpb.Lock');
  service = def;
  return def;
}

/** A failed call: the gRPC status name and its details. */
export class LockServiceError extends Error {
  override readonly name = 'LockServiceError';
  readonly code: string;

  constructor(code: string, details: string) {
    super(`${code}: ${details}`);
    this.code = code;
  }
}

export class LockService {
  readonly #channels: grpc.Client[];

  constructor(endpoints: readonly string[]) {
    this.#channels = endpoints.map(
      (e) => new grpc.Client(e.replace(/^https?:\/\//, ''), grpc.credentials.createInsecure()),
    );
  }

  get members(): number {
    return this.#channels.length;
  }

  /** Lock `name` with `lease` on member `member`: the lock key (its create revision: the token). */
  async lock(
    member: number,
    name: string,
    lease: bigint,
    deadlineMs: number,
    signal?: AbortSignal,
  ): Promise<Buffer> {
    const req = { name: Buffer.from(name), lease: `${lease}` };
    const r = await this.#unary(member, 'Lock', req, deadlineMs, signal);
    const key = r.key;
    if (!Buffer.isBuffer(key)) throw new LockServiceError('INTERNAL', 'Lock answered no key');
    return key;
  }

  async unlock(member: number, key: Buffer, deadlineMs: number): Promise<void> {
    await this.#unary(member, 'Unlock', { key }, deadlineMs);
  }

  close(): void {
    for (const c of this.#channels) c.close();
  }

  #unary(
    member: number,
    rpc: string,
    request: Message,
    deadlineMs: number,
    signal?: AbortSignal,
  ): Promise<Message> {
    const m = lockService()[rpc];
    const channel = this.#channels[member];
    if (m === undefined || channel === undefined)
      return Promise.reject(new Error(`no ${rpc} on member ${member}`));
    return new Promise((resolve, reject) => {
      const call = channel.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        (bytes: Buffer) => m.responseDeserialize(bytes) as Message,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err, value) => {
          signal?.removeEventListener('abort', cancel);
          if (err !== null)
            reject(new LockServiceError(grpc.status[err.code] ?? String(err.code), err.details));
          else resolve(value ?? {});
        },
      );
      // A cancelled Lock withdraws the key it queued (server/api/lock.ts). The listener goes
      // with the call: the signal is the client's one stop signal, for thousands of calls.
      const cancel = (): void => call.cancel();
      signal?.addEventListener('abort', cancel, { once: true });
    });
  }
}
