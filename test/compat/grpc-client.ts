// A raw etcd v3 gRPC client over tenure's own .proto files (proto/), for the differential script
// and the fault scenarios: unary calls that resolve to a response or a gRPC status, and bidi
// streams read with predicates or taken raw.
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import { serviceDefinition } from '../../src/server/api/protos.js';

/** `service` is a KV-style name of etcdserverpb, or a qualified one such as `v3lockpb.Lock`. */
function method(service: string, name: string): protoLoader.MethodDefinition<object, object> {
  const m = serviceDefinition(service.includes('.') ? service : `etcdserverpb.${service}`)[name];
  if (m === undefined) throw new Error(`no method ${service}.${name}`);
  return m;
}

export type Message = Record<string, unknown>;

/** A unary outcome: the response, or the gRPC status name and details. */
export type Outcome = { ok: Message } | { error: { code: string; details: string } };

/** Bound on one unary call; the cluster is local, so this only guards against a hang. */
const callDeadlineMs = 10_000;

export class EtcdGrpc {
  readonly #client: grpc.Client;

  constructor(endpoint: string) {
    this.#client = new grpc.Client(
      endpoint.replace(/^http:\/\//, ''),
      grpc.credentials.createInsecure(),
    );
  }

  unary(
    service: string,
    name: string,
    request: Message,
    deadlineMs: number = callDeadlineMs,
  ): Promise<Outcome> {
    const m = method(service, name);
    return new Promise((resolve) => {
      this.#client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        (bytes: Buffer) => m.responseDeserialize(bytes) as Message,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err, value) => {
          if (err !== null) {
            resolve({
              error: { code: grpc.status[err.code] ?? String(err.code), details: err.details },
            });
          } else {
            resolve({ ok: value ?? {} });
          }
        },
      );
    });
  }

  stream(service: string, name: string): BidiStream {
    return new BidiStream(this.duplex(service, name));
  }

  /** The bare call, for a caller that timestamps each message itself. */
  duplex(service: string, name: string): grpc.ClientDuplexStream<Message, Message> {
    const m = method(service, name);
    return this.#client.makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      (bytes: Buffer) => m.responseDeserialize(bytes) as Message,
      new grpc.Metadata(),
    );
  }

  close(): void {
    this.#client.close();
  }
}

/** Bound on waiting for stream responses (a hang guard, not a speed check). */
const streamWaitMs = 10_000;

export class BidiStream {
  readonly #call: grpc.ClientDuplexStream<Message, Message>;
  readonly #responses: Message[] = [];
  #cursor = 0;
  #error: string | undefined;
  readonly #wakers = new Set<() => void>();

  constructor(call: grpc.ClientDuplexStream<Message, Message>) {
    this.#call = call;
    call.on('data', (m: Message) => {
      this.#responses.push(m);
      this.#wake();
    });
    call.on('error', (e: grpc.ServiceError) => {
      this.#error = `${grpc.status[e.code] ?? e.code}: ${e.details}`;
      this.#wake();
    });
    call.on('end', () => this.#wake());
  }

  #wake(): void {
    for (const w of [...this.#wakers]) w();
  }

  send(request: Message): void {
    this.#call.write(request);
  }

  /**
   * Wait until `done(responses since the last take)` holds; return those responses and move past
   * them. Rejects with everything received so far if the stream fails or the bound passes.
   */
  take(done: (batch: readonly Message[]) => boolean, what: string): Promise<Message[]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const batch = this.#responses.slice(this.#cursor);
        if (done(batch)) {
          finish();
          this.#cursor = this.#responses.length;
          resolve(batch);
        } else if (this.#error !== undefined) {
          finish();
          reject(
            new Error(`${what}: stream failed (${this.#error}); got ${JSON.stringify(batch)}`),
          );
        }
      };
      const timer = setTimeout(() => {
        finish();
        const batch = this.#responses.slice(this.#cursor);
        reject(new Error(`${what}: not within ${streamWaitMs} ms; got ${JSON.stringify(batch)}`));
      }, streamWaitMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.#wakers.delete(check);
      };
      this.#wakers.add(check);
      check();
    });
  }

  close(): void {
    this.#call.on('error', () => undefined);
    this.#call.cancel();
  }
}
