// A raw gRPC client of any etcd v3 method by path, on tenure's protos, for the operations
// suites: bulk writes, full reads, HashKV and Alarm answers compared exactly, with an optional
// auth token (etcd's `token` metadata).
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../../src/server/api/protos.js';

export type Obj = Record<string, unknown>;

export interface CallError {
  readonly code: number;
  readonly details: string;
}

/** How long one call may take before it fails (a bound on a hang). */
const callDeadlineMs = 15_000;

export class OpsClient {
  readonly #raw: grpc.Client;
  token: string | undefined;

  constructor(endpoint: string) {
    this.#raw = new grpc.Client(
      endpoint.replace(/^https?:\/\//, ''),
      grpc.credentials.createInsecure(),
    );
  }

  call(path: string, req: object): Promise<{ value?: Obj; error?: CallError }> {
    const [, service = '', name = ''] = path.split('/');
    const m = serviceDefinition(service)[name];
    if (m === undefined) throw new Error(`no method ${path}`);
    const md = new grpc.Metadata();
    if (this.token !== undefined) md.set('token', this.token);
    return new Promise((resolve) => {
      this.#raw.makeUnaryRequest(
        m.path,
        (v: object) => m.requestSerialize(v),
        (b: Buffer) => m.responseDeserialize(b) as Obj,
        req,
        md,
        { deadline: Date.now() + callDeadlineMs },
        (err, value) => {
          if (err) resolve({ error: { code: err.code, details: err.details } });
          else resolve(value === undefined ? {} : { value });
        },
      );
    });
  }

  async ok(path: string, req: object): Promise<Obj> {
    const r = await this.call(path, req);
    if (r.error) throw new Error(`${path}: ${r.error.code} ${r.error.details}`);
    return r.value ?? {};
  }

  put(key: string, value: string | Buffer, lease = '0'): Promise<Obj> {
    return this.ok('/etcdserverpb.KV/Put', {
      key: Buffer.from(key),
      value: typeof value === 'string' ? Buffer.from(value) : value,
      lease,
    });
  }

  /** Every key with `prefix`, as "key=value@create/mod/version/lease" lines, at `revision`. */
  async dump(prefix: string, revision = 0): Promise<string[]> {
    const key = Buffer.from(prefix);
    const end = Buffer.from(key);
    end[end.length - 1] = (end[end.length - 1] as number) + 1;
    const r = await this.ok('/etcdserverpb.KV/Range', { key, range_end: end, revision });
    return (r['kvs'] as Obj[]).map(
      (kv) =>
        `${String(kv['key'])}=${String(kv['value'])}@${String(kv['create_revision'])}/` +
        `${String(kv['mod_revision'])}/${String(kv['version'])}/${String(kv['lease'])}`,
    );
  }

  async hashKv(revision: number): Promise<{ value?: Obj; error?: CallError }> {
    return this.call('/etcdserverpb.Maintenance/HashKV', { revision });
  }

  async login(name: string, password: string): Promise<void> {
    const r = await this.ok('/etcdserverpb.Auth/Authenticate', { name, password });
    this.token = String(r['token']);
  }

  close(): void {
    this.#raw.close();
  }
}

/** Write `count` keys `prefix/00000…` in batches of parallel puts. */
export async function fill(
  c: OpsClient,
  prefix: string,
  count: number,
  value: (i: number) => string,
): Promise<void> {
  const batch = 100;
  for (let i = 0; i < count; i += batch) {
    const puts: Promise<Obj>[] = [];
    for (let j = i; j < Math.min(count, i + batch); j++)
      puts.push(c.put(`${prefix}/${String(j).padStart(5, '0')}`, value(j)));
    await Promise.all(puts);
  }
}
