// Node stream plumbing for bidi calls: incoming messages as an async iterable that ends on
// half-close or abort (and pauses the source when too many wait), and writes that wait for the
// transport to drain. Shared by the gRPC server and the gateway.
import type { Readable, Writable } from 'node:stream';

/**
 * The messages `source` emits, in order. Iteration ends when the source ends or errors, or when
 * `signal` aborts, so a consumer never waits forever on a dead call. At most `queuedMax` messages
 * wait; beyond that the source is paused (backpressure reaches the client through HTTP/2 flow
 * control).
 */
export function messagesOf(
  source: Readable,
  signal: AbortSignal,
  queuedMax: number,
): AsyncIterable<unknown> {
  const queue: unknown[] = [];
  let ended = false;
  let waiter: (() => void) | undefined;
  const wake = (): void => {
    const w = waiter;
    waiter = undefined;
    w?.();
  };
  const finish = (): void => {
    ended = true;
    wake();
  };
  source.on('data', (message: unknown) => {
    queue.push(message);
    if (queue.length >= queuedMax) source.pause();
    wake();
  });
  source.once('end', finish);
  source.once('error', finish);
  source.once('close', finish);
  signal.addEventListener('abort', finish, { once: true });
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (signal.aborted) return;
        if (queue.length > 0) {
          const message = queue.shift();
          if (source.isPaused() && queue.length < queuedMax) source.resume();
          yield message;
          continue;
        }
        if (ended) return;
        await new Promise<void>((resolve) => (waiter = resolve));
      }
    },
  };
}

/** Writes that resolve once `sink` can take more; after an abort they are dropped. */
export function writerOf(sink: Writable, signal: AbortSignal): (message: object) => Promise<void> {
  return (message) => {
    if (signal.aborted || sink.writableEnded || sink.destroyed) return Promise.resolve();
    if (sink.write(message)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        sink.off('drain', done);
        sink.off('close', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      sink.on('drain', done);
      sink.on('close', done);
      signal.addEventListener('abort', done, { once: true });
    });
  };
}

/** A finished iterable of the given messages (a gateway stream's single request). */
export function messagesFrom(messages: readonly unknown[]): AsyncIterable<unknown> {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async *[Symbol.asyncIterator]() {
      yield* messages;
    },
  };
}
