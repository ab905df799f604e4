// The gRPC methods of tenure's protos by path, each with its codecs and, when tenure serves it,
// its handler under its call kind (grpc-server.ts dispatches on the kind).
import type * as protoLoader from '@grpc/proto-loader';
import type { BidiHandler, ServerStreamHandler, UnaryHandler } from './convert.js';
import type { HandlerTable } from './handler-table.js';
import { packageDefinition } from './protos.js';

export type Kind =
  | { readonly kind: 'unary'; readonly handler: UnaryHandler }
  | { readonly kind: 'serverStream'; readonly handler: ServerStreamHandler }
  | { readonly kind: 'bidi'; readonly handler: BidiHandler };

export interface Method {
  readonly path: string;
  readonly decode: (bytes: Buffer) => unknown;
  readonly encode: (value: object) => Buffer;
  readonly call: Kind | undefined;
}

/** Every method of the protos by path, with its handler when tenure serves it. */
export function methodTable(handlers: HandlerTable): Map<string, Method> {
  const out = new Map<string, Method>();
  for (const def of Object.values(packageDefinition())) {
    if ('format' in def) continue; // a message or an enum, not a service
    for (const m of Object.values<protoLoader.MethodDefinition<object, object>>(def)) {
      const u = handlers.unary.get(m.path);
      const s = handlers.serverStream.get(m.path);
      const b = handlers.bidi.get(m.path);
      let call: Kind | undefined;
      if (!m.requestStream && !m.responseStream && u) call = { kind: 'unary', handler: u };
      else if (!m.requestStream && m.responseStream && s)
        call = { kind: 'serverStream', handler: s };
      else if (m.requestStream && m.responseStream && b) call = { kind: 'bidi', handler: b };
      out.set(m.path, {
        path: m.path,
        decode: (bytes) => m.requestDeserialize(bytes),
        encode: (value) => m.responseSerialize(value),
        call,
      });
    }
  }
  return out;
}
