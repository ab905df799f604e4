// gRPC's message framing, timeouts and status text (grpc-wire.ts), without a socket; and the
// protocol edges of the server that uses them, through a raw HTTP/2 client: a message split over
// many DATA frames, a gzip-compressed request, an oversized one, a malformed one, a deadline
// that passes, a wrong content type and a missing request.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  encodeGrpcMessage,
  frameMessage,
  GrpcWireError,
  MessageReader,
  parseGrpcTimeout,
} from '../../src/server/api/grpc-wire.js';
import { GrpcStatus as OurStatus } from '../../src/server/api/grpc-codes.js';
import { startFixture } from './api-fixture.js';
import { waitAtMost } from '../support/poll.js';

test('MessageReader: messages split across chunks and several in one chunk', () => {
  const a = Buffer.from('first message');
  const b = Buffer.alloc(0);
  const c = Buffer.from('x'.repeat(300));
  const wire = Buffer.concat([frameMessage(a), frameMessage(b), frameMessage(c)]);
  for (const step of [1, 2, 5, 7, wire.length]) {
    const r = new MessageReader(1000, undefined);
    const got: Buffer[] = [];
    for (let i = 0; i < wire.length; i += step) got.push(...r.push(wire.subarray(i, i + step)));
    assert.deepEqual(
      got.map((m) => m.toString()),
      [a, b, c].map((m) => m.toString()),
      `step ${step}`,
    );
    assert.equal(r.partial, false);
  }
  const r = new MessageReader(1000, undefined);
  r.push(frameMessage(a).subarray(0, 8));
  assert.equal(r.partial, true);
});

test('MessageReader: over the limit is RESOURCE_EXHAUSTED; gzip and deflate are inflated', () => {
  const r = new MessageReader(10, undefined);
  assert.throws(
    () => r.push(frameMessage(Buffer.alloc(11))),
    (e: unknown) =>
      e instanceof GrpcWireError &&
      e.code === OurStatus.RESOURCE_EXHAUSTED &&
      e.message === 'Received message larger than max (11 vs. 10)',
  );
  const body = Buffer.from('hello, compressed');
  const zipped = gzipSync(body);
  const framed = frameMessage(zipped);
  framed[0] = 1;
  assert.equal(new MessageReader(100, 'gzip').push(framed)[0]?.toString(), body.toString());
  assert.throws(
    () => new MessageReader(100, 'snappy').push(framed),
    (e: unknown) => e instanceof GrpcWireError && e.code === OurStatus.UNIMPLEMENTED,
  );
  assert.throws(
    () => new MessageReader(100, 'deflate').push(framed),
    (e: unknown) => e instanceof GrpcWireError && e.code === OurStatus.INTERNAL,
  );
});

test('grpc-timeout units and malformed values; grpc-message percent-encoding', () => {
  assert.equal(parseGrpcTimeout('2S'), 2000);
  assert.equal(parseGrpcTimeout('150m'), 150);
  assert.equal(parseGrpcTimeout('1H'), 3_600_000);
  assert.equal(parseGrpcTimeout('3M'), 180_000);
  assert.equal(parseGrpcTimeout('5000u'), 5);
  assert.equal(parseGrpcTimeout('7000000n'), 7);
  assert.equal(parseGrpcTimeout('123456789S'), undefined); // more than 8 digits
  assert.equal(parseGrpcTimeout('10'), undefined);
  assert.equal(parseGrpcTimeout('-1S'), undefined);
  // Past what a timer can hold (Node would fire it after 1 ms): no deadline.
  assert.equal(parseGrpcTimeout('2000000S'), 2_000_000_000);
  assert.equal(parseGrpcTimeout('3000000S'), undefined);
  assert.equal(parseGrpcTimeout('99999999H'), undefined);
  assert.equal(encodeGrpcMessage('etcdserver: key not found'), 'etcdserver: key not found');
  assert.equal(encodeGrpcMessage('100% done\n'), '100%25 done%0A');
  assert.equal(encodeGrpcMessage('é'), '%C3%A9');
});

interface RawAnswer {
  readonly httpStatus: number | undefined;
  readonly grpcStatus: string | undefined;
  readonly grpcMessage: string | undefined;
  readonly body: Buffer;
}

/** One raw call: `chunks` are written as separate DATA frames, then the stream half-closes. */
function rawCall(
  session: http2.ClientHttp2Session,
  path: string,
  chunks: readonly Buffer[],
  extra: http2.OutgoingHttpHeaders = {},
  halfClose = true,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...extra,
    });
    let httpStatus: number | undefined;
    let grpcStatus: string | undefined;
    let grpcMessage: string | undefined;
    const body: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (typeof h['grpc-status'] === 'string') grpcStatus = h['grpc-status'];
      if (typeof h['grpc-message'] === 'string') grpcMessage = h['grpc-message'];
    };
    req.on('response', (h) => {
      httpStatus = h[':status'];
      take(h);
    });
    req.on('trailers', take);
    req.on('data', (c: Buffer) => body.push(c));
    req.on('error', reject);
    // The server's end of the stream ends the call; a client still sending then resets it (as
    // gRPC clients do once they have the status).
    const done = (): void => {
      resolve({ httpStatus, grpcStatus, grpcMessage, body: Buffer.concat(body) });
      if (!req.closed) req.close();
    };
    req.on('end', done);
    req.on('close', done);
    const write = (i: number): void => {
      if (i === chunks.length) {
        if (halfClose) req.end();
        return;
      }
      req.write(chunks[i], () => setImmediate(() => write(i + 1)));
    };
    write(0);
  });
}

test('the server: split and compressed requests, limits, bad input, deadlines', async (t) => {
  const f = await startFixture();
  t.after(() => f.close());
  const session = http2.connect(`http://127.0.0.1:${f.port}`);
  t.after(() => session.close());
  // Range of key "a" (field 1, bytes "a") and an empty Status request.
  const range = Buffer.from([0x0a, 0x01, 0x61]);
  const framed = frameMessage(range);
  const split = await rawCall(session, '/etcdserverpb.KV/Range', [
    framed.subarray(0, 2),
    framed.subarray(2, 6),
    framed.subarray(6),
  ]);
  assert.equal(split.httpStatus, 200);
  assert.equal(split.grpcStatus, '0');
  assert.ok(split.body.length > 5, 'a RangeResponse came back');

  const zipped = frameMessage(gzipSync(range));
  zipped[0] = 1;
  const gz = await rawCall(session, '/etcdserverpb.KV/Range', [zipped], {
    'grpc-encoding': 'gzip',
  });
  assert.equal(gz.grpcStatus, '0');

  const huge = Buffer.alloc(5);
  huge.writeUInt32BE(1024 * 1024 * 1024, 1);
  const big = await rawCall(session, '/etcdserverpb.KV/Range', [huge]);
  assert.equal(big.grpcStatus, String(GrpcStatus.RESOURCE_EXHAUSTED));

  const garbage = await rawCall(session, '/etcdserverpb.KV/Range', [
    frameMessage(Buffer.from([0xff, 0xff, 0xff])),
  ]);
  assert.equal(garbage.grpcStatus, String(GrpcStatus.INTERNAL));

  const none = await rawCall(session, '/etcdserverpb.KV/Range', []);
  assert.equal(none.grpcStatus, String(GrpcStatus.INTERNAL));

  const unknown = await rawCall(session, '/etcdserverpb.Auth/AuthStatus', [frameMessage(range)]);
  assert.equal(unknown.grpcStatus, String(GrpcStatus.UNIMPLEMENTED));

  const text = await rawCall(session, '/etcdserverpb.KV/Range', [frameMessage(range)], {
    'content-type': 'text/plain',
  });
  assert.equal(text.httpStatus, 415);

  // A Watch stream that never sends: its 1 ms deadline passes while it waits.
  const late = await rawCall(
    session,
    '/etcdserverpb.Watch/Watch',
    [],
    { 'grpc-timeout': '50m' },
    false,
  );
  assert.equal(late.grpcStatus, String(GrpcStatus.DEADLINE_EXCEEDED));

  // A second request on a unary call is refused at once, before the client half-closes.
  const twice = await rawCall(
    session,
    '/etcdserverpb.KV/Range',
    [frameMessage(range), frameMessage(range)],
    {},
    false,
  );
  assert.equal(twice.grpcStatus, String(GrpcStatus.UNIMPLEMENTED));

  // A bad message on a Watch stream ends the call and its handler: the watch hub goes away.
  const hubs = (): number =>
    (f.backend.machine as unknown as { hubs: ReadonlySet<unknown> }).hubs.size;
  const badWatch = await rawCall(
    session,
    '/etcdserverpb.Watch/Watch',
    [frameMessage(Buffer.from([0xff, 0xff, 0xff]))],
    {},
    false,
  );
  assert.equal(badWatch.grpcStatus, String(GrpcStatus.INTERNAL));
  await waitAtMost(() => hubs() === 0, 2_000);
  assert.equal(hubs(), 0, 'the watch handler stopped');

  // A deadline too long for a timer is no deadline (it used to fire after 1 ms).
  const longWait = rawCall(
    session,
    '/etcdserverpb.Watch/Watch',
    [],
    { 'grpc-timeout': '3000000S' },
    false,
  );
  const quick = await Promise.race([
    longWait.then(() => 'ended'),
    new Promise((r) => setTimeout(() => r('still open'), 300)),
  ]);
  assert.equal(quick, 'still open');

  // The session still serves after all of the above.
  const again = await rawCall(session, '/etcdserverpb.KV/Range', [frameMessage(range)]);
  assert.equal(again.grpcStatus, '0');
});

test("the server's status code table is gRPC's", () => {
  for (const [name, code] of Object.entries(OurStatus)) {
    assert.equal(GrpcStatus[name as keyof typeof GrpcStatus], code, name);
  }
  assert.equal(Object.keys(OurStatus).length, 17);
});
