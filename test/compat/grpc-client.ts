// A raw etcd v3 gRPC client over tenure's own .proto files (proto/), for the differential script
// and the fault scenarios: unary calls that resolve to a response or a gRPC status, and bidi
// streams read with predicates or taken raw.
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import { serviceDefinition } from '../../src/server/api/protos.js';
import { Wakeups } from '../support/poll.js';

/** `service` is a KV-style name of etcdserverpb, or a qualified one such as `v3lockpb.Lock`. */
function method(service: string, name: string): protoLoader.MethodDefinition<object, object> {
  const m = serviceDefinition(service.includes('.') ? service : `etcdserverpb.${service}`)[name];
  if (m === undefined) throw new Error(`no method ${service}.${name}`);
  return m;
}

export type Message = Record<string, unknown>;

function metadataOf(entries: Readonly<Record<string, string>>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(entries)) md.set(k, v);
  return md;
}

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
    metadata: Readonly<Record<string, string>> = {},
  ): Promise<Outcome> {
    const m = method(service, name);
    return new Promise((resolve) => {
      this.#client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        (bytes: Buffer) => m.responseDeserialize(bytes) as Message,
        request,
        metadataOf(metadata),
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

  stream(
    service: string,
    name: string,
    metadata: Readonly<Record<string, string>> = {},
  ): BidiStream {
    return new BidiStream(this.duplex(service, name, metadata));
  }

  /** The bare call, for a caller that timestamps each message itself. */
  duplex(
    service: string,
    name: string,
    metadata: Readonly<Record<string, string>> = {},
  ): grpc.ClientDuplexStream<Message, Message> {
    const m = method(service, name);
    return this.#client.makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      (bytes: Buffer) => m.responseDeserialize(bytes) as Message,
      metadataOf(metadata),
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
  readonly #wakeups = new Wakeups();

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
    this.#wakeups.wake();
  }

  send(request: Message): void {
    this.#call.write(request);
  }

  /**
   * Wait until `done(responses since the last take)` holds; return those responses and move past
   * them. Rejects with everything received so far if the stream fails or the bound passes.
   */
  take(done: (batch: readonly Message[]) => boolean, what: string): Promise<Message[]> {
    return this.#wakeups.wait(
      () => {
        const batch = this.#responses.slice(this.#cursor);
        if (done(batch)) {
          this.#cursor = this.#responses.length;
          return { done: batch };
        }
        if (this.#error === undefined) return undefined;
        const why = `${what}: stream failed (${this.#error}); got ${JSON.stringify(batch)}`;
        return { fail: new Error(why) };
      },
      streamWaitMs,
      () => {
        const batch = this.#responses.slice(this.#cursor);
        return new Error(`${what}: not within ${streamWaitMs} ms; got ${JSON.stringify(batch)}`);
      },
    );
  }

  close(): void {
    this.#call.on('error', () => undefined);
    this.#call.cancel();
  }
}
