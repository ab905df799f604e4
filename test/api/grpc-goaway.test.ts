// A client's GOAWAY does not refuse the streams it sends after it (issue 14). A client that closes
// its connection sends GOAWAY, and HEADERS it had queued can follow on the wire: nghttp2, which
// grpc-js's transport runs on, sends control frames before the HEADERS that open streams. RFC
// 9113 §6.8: a GOAWAY's last-stream-id bounds the streams its *receiver* initiates, so those
// streams are the client's to send and the server's to serve; grpc-go (etcd) serves them. Here a
// raw HTTP/2 client sends exactly that order and expects an answer, not a refusal (node:http2
// refused the stream and closed with a GOAWAY whose last-stream-id was below it), and then a
// graceful close of the connection; grpc-js does the same with a channel closed just after a
// call starts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../../src/server/api/protos.js';
import type { Fixture } from './api-fixture.js';
import { b, startFixture, text } from './api-fixture.js';
import type { Frame } from './h2-raw-client.js';
import {
  FRAME,
  goaway,
  H2_NO_ERROR,
  H2_REFUSED_STREAM,
  RawH2Client,
  streamEnd,
  unaryRequest,
} from './h2-raw-client.js';

const RANGE = '/etcdserverpb.KV/Range';
const rangeMethod = serviceDefinition('etcdserverpb.KV')['Range'];
if (rangeMethod === undefined) throw new Error('no KV.Range in the protos');
const range = rangeMethod;

let f: Fixture;
before(async () => {
  f = await startFixture();
  await f.client.ok('/etcdserverpb.KV/Put', { key: b('k'), value: b('v') });
});
after(() => f.close());

const rangeK = (streamId: number): Buffer =>
  unaryRequest(streamId, RANGE, range.requestSerialize({ key: b('k') }));

/** The stream ended with grpc-status 0 and its one message is a Range answer for `k`. */
function assertServed(c: RawH2Client, streamId: number, end: Frame): void {
  if (end.type === FRAME.RST_STREAM) {
    const code = end.payload.readUInt32BE(0);
    const name = code === H2_REFUSED_STREAM ? 'REFUSED_STREAM' : `code ${code}`;
    assert.fail(`stream ${streamId} was reset with ${name}`);
  }
  assert.equal(end.headers?.get('grpc-status'), '0');
  const data = Buffer.concat(
    c.frames.filter((x) => x.type === FRAME.DATA && x.streamId === streamId).map((x) => x.payload),
  );
  const answer = range.responseDeserialize(data.subarray(5)) as { kvs: { value: unknown }[] };
  assert.equal(text(answer.kvs[0]?.value), 'v');
}

/** After the client's GOAWAY and its calls, the server ends the connection with GOAWAY(0). */
async function assertGracefulClose(c: RawH2Client, lastStreamId: number): Promise<void> {
  const away = await c.waitFor('a GOAWAY from the server', (x) => x.type === FRAME.GOAWAY);
  assert.equal(away.payload.readUInt32BE(4), H2_NO_ERROR, 'GOAWAY error code');
  assert.ok(away.payload.readUInt32BE(0) >= lastStreamId, 'GOAWAY last-stream-id');
  await c.waitClosed();
  assert.equal(
    c.frames.filter((x) => x.type === FRAME.RST_STREAM).length,
    0,
    'no stream was reset',
  );
}

test('a GOAWAY ahead of the first HEADERS: the call is served', async () => {
  const c = await RawH2Client.connect(f.port);
  try {
    // The listener's SETTINGS (client-listener.ts) is ACKed before the request is sent, so the
    // listener hands GOAWAY, HEADERS and DATA to node:http2 in one piece.
    await c.waitFor('the server SETTINGS', (x) => x.type === FRAME.SETTINGS);
    c.send(Buffer.concat([goaway(0, H2_NO_ERROR), rangeK(1)]));
    assertServed(c, 1, await c.waitFor('the end of stream 1', streamEnd(1)));
    await assertGracefulClose(c, 1);
  } finally {
    c.destroy();
  }
});

test('a GOAWAY ahead of the HEADERS of a later call on a used connection', async () => {
  const c = await RawH2Client.connect(f.port);
  try {
    c.send(rangeK(1));
    assertServed(c, 1, await c.waitFor('the end of stream 1', streamEnd(1)));
    c.send(Buffer.concat([goaway(0, H2_NO_ERROR), rangeK(3)]));
    assertServed(c, 3, await c.waitFor('the end of stream 3', streamEnd(3)));
    await assertGracefulClose(c, 3);
  } finally {
    c.destroy();
  }
});

test('a GOAWAY alone on an idle connection: the server closes it gracefully', async () => {
  const c = await RawH2Client.connect(f.port);
  try {
    c.send(rangeK(1));
    assertServed(c, 1, await c.waitFor('the end of stream 1', streamEnd(1)));
    c.send(goaway(0, H2_NO_ERROR));
    await assertGracefulClose(c, 1);
  } finally {
    c.destroy();
  }
});

/** One Range for `k` on `client`: the value, or the error's code and text. */
function rangeOn(client: grpc.Client): Promise<string> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      range.path,
      (v: object) => range.requestSerialize(v),
      (bytes: Buffer) => range.responseDeserialize(bytes) as { kvs: { value: unknown }[] },
      { key: b('k') },
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err, value) => resolve(err ? `${err.code} ${err.details}` : text(value?.kvs[0]?.value)),
    );
  });
}

test('grpc-js: a call started just before its channel closes is served', async () => {
  // grpc-js sends the channel's GOAWAY and the call's HEADERS in one write, GOAWAY first; the
  // member used to refuse the call, and grpc-js then failed it with UNAVAILABLE (issue 14). A
  // local subchannel pool gives the client a connection of its own (the fixture's client would
  // otherwise share it and keep it open).
  for (let i = 0; i < 3; i++) {
    const client = new grpc.Client(f.address, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
    });
    assert.equal(await rangeOn(client), 'v');
    const call = rangeOn(client);
    process.nextTick(() => client.close());
    assert.equal(await call, 'v', `call ${i}`);
  }
});
