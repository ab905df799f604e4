// What the member sends when a client's framing is broken, as bytes a proxy dropped leave it
// (issue 14): a connection error, GOAWAY with PROTOCOL_ERROR (RFC 9113 §5.4.1), from nghttp2
// under node:http2, and no RST_STREAM on the streams of that connection. grpc-js reports each
// of them as "13 INTERNAL: Received RST_STREAM with code 1" all the same: node's client gives
// every stream of a session ended by a peer's GOAWAY that GOAWAY's code as its rstCode
// (lib/internal/http2/core.js, Http2Stream._destroy), and grpc-js words any rstCode that way
// (subchannel-call.ts). etcd (grpc-go) closes the TCP connection without a GOAWAY on a framing
// error (internal/transport/http2_server.go, HandleStreams), which grpc-js reports as
// "14 UNAVAILABLE: Connection dropped". See docs/compatibility.md, "HTTP/2 connections".
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { serviceDefinition } from '../../src/server/api/protos.js';
import type { Fixture } from './api-fixture.js';
import { startFixture } from './api-fixture.js';
import {
  frame,
  FRAME,
  H2_PROTOCOL_ERROR,
  messageFrame,
  RawH2Client,
  requestHeaders,
} from './h2-raw-client.js';

const KEEP_ALIVE = '/etcdserverpb.Lease/LeaseKeepAlive';
const keepAlive = serviceDefinition('etcdserverpb.Lease')['LeaseKeepAlive'];
if (keepAlive === undefined) throw new Error('no Lease.LeaseKeepAlive in the protos');
const request = keepAlive;

let f: Fixture;
let lease: string;
before(async () => {
  f = await startFixture();
  lease = (await f.client.ok('/etcdserverpb.Lease/LeaseGrant', { TTL: 60 }))['ID'] as string;
});
after(() => f.close());

test('a broken frame on a LeaseKeepAlive connection: GOAWAY PROTOCOL_ERROR, no RST_STREAM', async () => {
  const c = await RawH2Client.connect(f.port);
  try {
    const renew = request.requestSerialize({ ID: lease });
    c.send(Buffer.concat([requestHeaders(1, KEEP_ALIVE), messageFrame(1, renew, false)]));
    await c.waitFor('a keep-alive answer', (x) => x.type === FRAME.DATA && x.streamId === 1);
    // A DATA frame on stream 0 is a connection error of type PROTOCOL_ERROR (RFC 9113 §6.1):
    // one of the frames a lost byte turns the rest of a DATA payload into.
    c.send(frame(FRAME.DATA, 0, 0, Buffer.alloc(8)));
    const away = await c.waitFor('a GOAWAY', (x) => x.type === FRAME.GOAWAY);
    assert.equal(away.payload.readUInt32BE(4), H2_PROTOCOL_ERROR);
    // node:http2 keeps the connection open after that GOAWAY (docs/compatibility.md); the
    // client closes it, as grpc-js does.
    assert.deepEqual(
      c.frames.filter((x) => x.type === FRAME.RST_STREAM),
      [],
      'the member resets no stream',
    );
  } finally {
    c.destroy();
  }
});
