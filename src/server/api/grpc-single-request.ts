// Unary and server-streaming calls: exactly one request, complete at the client's half-close,
// then the handler; a unary answer leaves with its status, a server stream's messages as the
// handler sends them.
import { constants as h2constants } from 'node:http2';
import type { CallContext } from './grpc-call-context.js';
import { GrpcStatus } from './grpc-codes.js';
import type { Kind } from './grpc-methods.js';
import { GrpcWireError } from './grpc-wire.js';

export function serveSingleRequest(
  ctx: CallContext,
  kind: Exclude<Kind, { readonly kind: 'bidi' }>,
): void {
  const { stream, call, path, reader } = ctx;
  const messages: Buffer[] = [];
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => {
    if (call.done) return;
    try {
      for (const m of reader.push(chunk)) {
        messages.push(m);
        bytes += m.length;
      }
    } catch (e) {
      if (!(e instanceof GrpcWireError)) throw e;
      call.finish({ code: e.code, details: e.message });
      // The rest of the request (an oversized message, say) is not wanted: RST_STREAM NO_ERROR
      // once the status is out tells the client to stop sending (RFC 9113 §8.1), as grpc-go
      // does, instead of our granting flow-control window for bytes that are dropped.
      stream.close(h2constants.NGHTTP2_NO_ERROR);
      return;
    }
    // A second request is refused at once, not buffered until the client half-closes.
    if (messages.length > 1) {
      call.finish({
        code: GrpcStatus.UNIMPLEMENTED,
        details: 'Received a second request message for server streaming method',
      });
      messages.length = 0;
    }
  });
  stream.once('end', () => {
    if (call.done) return;
    // A second message was refused as it arrived ('data' above).
    if (messages.length === 0 || reader.partial) {
      call.finish({ code: GrpcStatus.INTERNAL, details: 'Received no request message' });
      return;
    }
    const d = ctx.decode(messages[0] as Buffer);
    if (!d.ok) return;
    const s = ctx.begin(bytes, kind.kind === 'serverStream');
    if (s === undefined) return;
    ctx.setScope(s);
    if (kind.kind === 'unary') {
      // One catch for the handler and for encoding its answer: a response that does not
      // serialize is a handler bug, answered INTERNAL, never an unhandled rejection.
      Promise.resolve()
        .then(() => kind.handler(d.value, s.info))
        .then((resp) => {
          if (!call.done) call.reply(ctx.encode(resp));
        })
        .catch((e: unknown) => call.finish(ctx.failure(e)));
      return;
    }
    const send = (resp: object): Promise<void> => {
      if (s.info.signal.aborted || call.done) return Promise.resolve();
      return call.send(ctx.encode(resp)) ? Promise.resolve() : call.writable();
    };
    Promise.resolve()
      .then(() => kind.handler(d.value, s.info, send))
      .then(
        () => ctx.endStream(path, s),
        (e: unknown) => ctx.endStream(path, s, { e }),
      );
  });
}
