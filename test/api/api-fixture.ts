// A client API server over a MemoryBackend on an ephemeral port, and a raw grpc-js client that
// speaks tenure's protos through proto-loader, for the API layer's tests. Every server started
// here is closed by `close()`, which the tests call in `finally` / `after`.
import * as grpc from '@grpc/grpc-js';
import type { ClientApi, ClientApiOptions } from '../../src/server/api/client-listener.js';
import { startClientApi } from '../../src/server/api/client-listener.js';
import type { Logger } from '../../src/server/api/log.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import { serviceDefinition } from '../../src/server/api/protos.js';

/** A MemoryBackend whose leadership a test can take away and give back. */
export class LeaderSwitchBackend extends MemoryBackend {
  private leader = true;
  private readonly listeners = new Set<(leader: bigint) => void>();

  override hasLeader(): boolean {
    return this.leader;
  }

  // Optional only to match MemoryBackend's parameterless override of the interface method.
  override onLeaderChange(listener?: (leader: bigint) => void): () => void {
    if (listener === undefined) return () => {};
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  setLeader(present: boolean): void {
    this.leader = present;
    for (const l of [...this.listeners]) l(present ? this.memberId : 0n);
  }
}

/** Log lines a test can inspect (errors are bugs the server survived). */
export class RecordingLogger implements Logger {
  readonly lines: { level: string; obj: object; msg: string }[] = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj, msg });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj, msg });
  }
}

export interface Fixture {
  readonly backend: MemoryBackend;
  readonly api: ClientApi;
  readonly port: number;
  readonly address: string;
  readonly client: RawClient;
  readonly log: RecordingLogger;
  close(): Promise<void>;
}

export async function startFixture(
  backend: MemoryBackend = new MemoryBackend(),
  config: ClientApiOptions['config'] = {},
): Promise<Fixture> {
  const log = new RecordingLogger();
  const api = await startClientApi({ backend, urls: ['http://127.0.0.1:0'], log, config });
  const port = api.ports[0] ?? 0;
  const address = `127.0.0.1:${port}`;
  const client = new RawClient(address);
  return {
    backend,
    api,
    port,
    address,
    client,
    log,
    close: async () => {
      client.close();
      await api.close();
    },
  };
}

export type Obj = Record<string, unknown>;

export interface CallError {
  readonly code: number;
  readonly details: string;
}

function method(path: string): {
  path: string;
  requestSerialize: (v: object) => Buffer;
  responseDeserialize: (b: Buffer) => Obj;
} {
  const [, service = '', name = ''] = path.split('/');
  const m = serviceDefinition(service)[name];
  if (m === undefined) throw new Error(`no method ${path}`);
  return {
    path: m.path,
    requestSerialize: (v) => m.requestSerialize(v),
    responseDeserialize: (b) => m.responseDeserialize(b) as Obj,
  };
}

/** A grpc-js client calling methods by full path with proto-loader objects. */
export class RawClient {
  readonly raw: grpc.Client;

  /**
   * `options`: grpc-js channel options; `{ 'grpc.use_local_subchannel_pool': 1 }` gives this
   * client a connection of its own (grpc-js otherwise shares one per address between clients).
   */
  constructor(address: string, options: grpc.ChannelOptions = {}) {
    this.raw = new grpc.Client(address, grpc.credentials.createInsecure(), options);
  }

  /** Resolve with the response, or with `{ error }` for a non-OK status. */
  unary(
    path: string,
    req: object,
    metadata: Record<string, string> = {},
  ): Promise<{ value?: Obj; error?: CallError }> {
    const m = method(path);
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata)) md.set(k, v);
    return new Promise((resolve) => {
      this.raw.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        req,
        md,
        { deadline: Date.now() + 10_000 },
        (err, value) => {
          if (err) resolve({ error: { code: err.code, details: err.details } });
          else resolve(value === undefined ? {} : { value });
        },
      );
    });
  }

  /** Call and expect success. */
  async ok(path: string, req: object): Promise<Obj> {
    const r = await this.unary(path, req);
    if (r.error) throw new Error(`${path}: ${r.error.code} ${r.error.details}`);
    return r.value ?? {};
  }

  bidi(path: string, metadata: Record<string, string> = {}): BidiClient {
    const m = method(path);
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata)) md.set(k, v);
    return new BidiClient(
      this.raw.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, md),
    );
  }

  close(): void {
    this.raw.close();
  }
}

/** A bidi stream whose responses are awaited one at a time. */
export class BidiClient {
  private readonly queue: Obj[] = [];
  private waiters: (() => void)[] = [];
  ended: CallError | undefined;

  constructor(readonly call: grpc.ClientDuplexStream<object, Obj>) {
    call.on('data', (d: Obj) => {
      this.queue.push(d);
      this.wake();
    });
    call.on('status', (s: grpc.StatusObject) => {
      this.ended = { code: s.code, details: s.details };
      this.wake();
    });
    call.on('error', () => {});
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  write(req: object): void {
    this.call.write(req);
  }

  /** The next response; rejects if the stream ends first. */
  async next(): Promise<Obj> {
    for (;;) {
      const r = this.queue.shift();
      if (r !== undefined) return r;
      if (this.ended) throw new Error(`stream ended: ${this.ended.code} ${this.ended.details}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** The final status (after the server ends the stream). */
  async status(): Promise<CallError> {
    while (this.ended === undefined) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return this.ended;
  }

  cancel(): void {
    this.call.cancel();
  }
}

export const b = (s: string): Buffer => Buffer.from(s, 'utf8');
export const text = (x: unknown): string =>
  x instanceof Uint8Array ? Buffer.from(x).toString() : '';
