// Bidi calls (Watch, LeaseKeepAlive, ...): requests reach the handler as they arrive, with
// HTTP/2 flow control as the bound, and responses leave through the call's batched writes.
import type * as http2 from 'node:http2';
import { constants as h2constants } from 'node:http2';
import type { CallContext, Decoded } from './grpc-call-context.js';
import type { BidiHandler } from './convert.js';
import type { MessageReader } from './grpc-wire.js';
import { GrpcWireError } from './grpc-wire.js';

/** Serve one bidi call: messages flow to the handler as they come. */
export function serveBidi(ctx: CallContext, handler: BidiHandler, queuedMax: number): void {
  const { call, path } = ctx;
  const s = ctx.begin(undefined, true);
  if (s === undefined) return;
  ctx.setScope(s);
  // However the call ends (a bad request, a deadline, the client going), the handler must
  // stop: a watch loops until its signal aborts.
  call.onFinish = () => {
    s.cancel();
    s.end();
  };
  const signal = s.info.signal;
  const requests = requestsOf(
    ctx.stream,
    ctx.reader,
    ctx.decode,
    (e) => {
      call.finish({ code: e.code, details: e.message });
      // As for a single request (grpc-single-request.ts): stop the client sending.
      ctx.stream.close(h2constants.NGHTTP2_NO_ERROR);
    },
    signal,
    queuedMax,
  );
  const send = (resp: object): Promise<void> => {
    if (signal.aborted || call.done) return Promise.resolve();
    return call.send(ctx.encode(resp)) ? Promise.resolve() : call.writable();
  };
  Promise.resolve()
    .then(() =>
      handler({
        info: s.info,
        requests,
        send,
      }),
    )
    .then(
      () => ctx.endStream(path, s),
      (e: unknown) => ctx.endStream(path, s, { e }),
    );
}

/**
 * A bidi call's requests, decoded, in arrival order: the iteration ends when the client
 * half-closes, the stream closes or `signal` aborts. At most `queuedMax` decoded requests wait;
 * beyond that the HTTP/2 stream is paused, and its flow control reaches the client. A malformed
 * request ends the iteration after `onWireError` (which ends the call with a status).
 */
function requestsOf(
  source: http2.ServerHttp2Stream,
  reader: MessageReader,
  decode: (bytes: Buffer) => Decoded,
  onWireError: (e: GrpcWireError) => void,
  signal: AbortSignal,
  queuedMax: number,
): AsyncIterable<unknown> {
  const queue: unknown[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const end = (): void => {
    ended = true;
    poke();
  };
  source.on('data', (chunk: Buffer) => {
    if (ended) return;
    let msgs: Buffer[];
    try {
      msgs = reader.push(chunk);
    } catch (e) {
      if (!(e instanceof GrpcWireError)) throw e;
      onWireError(e);
      end();
      return;
    }
    for (const m of msgs) {
      const d = decode(m);
      if (!d.ok) {
        end();
        return;
      }
      queue.push(d.value);
    }
    if (queue.length >= queuedMax) source.pause();
    poke();
  });
  source.once('end', end);
  source.once('close', end);
  signal.addEventListener('abort', end, { once: true });
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          if (signal.aborted) return;
          if (queue.length > 0) {
            const next = queue.shift();
            if (source.isPaused() && queue.length < queuedMax) source.resume();
            yield next;
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        signal.removeEventListener('abort', end);
      }
    },
  };
}
