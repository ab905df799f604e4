// Stream plumbing for the JSON gateway's bidi calls (the gRPC side reads HTTP/2 streams itself,
// grpc-bidi.ts).

/** A finished iterable of the given messages (a gateway stream's single request). */
export function messagesFrom(messages: readonly unknown[]): AsyncIterable<unknown> {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async *[Symbol.asyncIterator]() {
      yield* messages;
    },
  };
}
