// What the call paths (grpc-single-request.ts, grpc-bidi.ts) get from the server for one call: its
// stream and Call, its decoded headers, its codecs, and the scope's start and end.
import type * as http2 from 'node:http2';
import type { CallScope } from './call-scope.js';
import type { Call, Status } from './grpc-call.js';
import type { MessageReader } from './grpc-wire.js';

/** A decoded request, or a call already ended with INTERNAL. */
export type Decoded = { ok: true; value: unknown } | { ok: false };

export interface CallContext {
  readonly stream: http2.ServerHttp2Stream;
  readonly call: Call;
  readonly path: string;
  readonly reader: MessageReader;
  /** Decode one request, or end the call with INTERNAL as grpc-js does for a bad message. */
  readonly decode: (bytes: Buffer) => Decoded;
  readonly encode: (resp: object) => Buffer;
  /** Start the call's scope, or end the call at once with the refusal. */
  readonly begin: (requestBytes: number | undefined, stream: boolean) => CallScope | undefined;
  /** How a streaming handler's end becomes the call's status. */
  readonly endStream: (method: string, scope: CallScope, error?: { e: unknown }) => void;
  /** The status a handler's exception stands for. */
  readonly failure: (e: unknown) => Status;
  /** The scope, once started, for the deadline and the client going away to cancel. */
  readonly setScope: (scope: CallScope) => void;
}
