// A minimal raw gRPC client of the etcd v3 KV and Maintenance services, on tenure's own protos,
// for tests that need to know exactly which writes were acknowledged (no client-side retries).
import * as grpc from '@grpc/grpc-js';
import { packageDefinition } from '../../src/server/api/protos.js';

const def = packageDefinition();
type Ctor = new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client;
const pkg = grpc.loadPackageDefinition(def) as unknown as {
  etcdserverpb: { KV: Ctor; Maintenance: Ctor };
};

type Callback = (err: grpc.ServiceError | null, resp: Record<string, unknown>) => void;
type Method = (req: object, opts: grpc.CallOptions, cb: Callback) => void;

export interface KvValue {
  readonly key: string;
  readonly value: string;
  readonly modRevision: number;
}

export class GrpcKv {
  private readonly kv: grpc.Client;
  private readonly maint: grpc.Client;

  constructor(endpoint: string) {
    const addr = endpoint.replace(/^http:\/\//, '');
    this.kv = new pkg.etcdserverpb.KV(addr, grpc.credentials.createInsecure());
    this.maint = new pkg.etcdserverpb.Maintenance(addr, grpc.credentials.createInsecure());
  }

  private call(client: grpc.Client, method: string, req: object, timeoutMs: number) {
    const fn = (client as unknown as Record<string, Method>)[method];
    if (!fn) throw new Error(`no method ${method}`);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      fn.call(client, req, { deadline: Date.now() + timeoutMs }, (err, resp) =>
        err ? reject(err) : resolve(resp),
      );
    });
  }

  async put(key: string, value: string, timeoutMs = 3000): Promise<number> {
    const r = await this.call(
      this.kv,
      'Put',
      { key: Buffer.from(key), value: Buffer.from(value) },
      timeoutMs,
    );
    return Number((r.header as { revision: string }).revision);
  }

  async range(prefix: string, timeoutMs = 5000): Promise<KvValue[]> {
    const key = Buffer.from(prefix);
    const end = Buffer.from(key);
    end[end.length - 1] = (end[end.length - 1] as number) + 1;
    const r = await this.call(this.kv, 'Range', { key, range_end: end }, timeoutMs);
    return (r.kvs as { key: Buffer; value: Buffer; mod_revision: string }[]).map((kv) => ({
      key: kv.key.toString(),
      value: kv.value.toString(),
      modRevision: Number(kv.mod_revision),
    }));
  }

  /** Maintenance.Status: this member's ID and the leader it knows. */
  async status(timeoutMs = 2000): Promise<{ memberId: string; leader: string; raftTerm: string }> {
    const r = await this.call(this.maint, 'Status', {}, timeoutMs);
    return {
      memberId: (r.header as { member_id: string }).member_id,
      leader: r.leader as string,
      raftTerm: r.raftTerm as string,
    };
  }

  close(): void {
    this.kv.close();
    this.maint.close();
  }
}
