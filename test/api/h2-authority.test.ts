// etcd 3.4's Go client may send the member's whole URL as the HTTP/2 :authority; Node's HTTP/2
// refuses such a stream (PROTOCOL_ERROR) unless the client API rewrites it. Here a raw HTTP/2
// client calls Maintenance.Status with a URL authority, a plain one, and many requests on one
// connection (so HPACK dynamic-table state carries across rewritten blocks).
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { test } from 'node:test';
import { authorityOf, encodeLiteralBlock } from '../../src/server/api/h2-authority.js';
import { startFixture } from './api-fixture.js';

/** One unary gRPC call with an empty request; resolves with the grpc-status trailer. */
function statusCall(session: http2.ClientHttp2Session, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': '/etcdserverpb.Maintenance/Status',
      ':authority': authority,
      'content-type': 'application/grpc',
      te: 'trailers',
      'x-long-header': 'v'.repeat(20_000), // a block larger than one frame
    });
    let grpcStatus = '';
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
    });
    req.on('trailers', (h: http2.IncomingHttpHeaders) => (grpcStatus = String(h['grpc-status'])));
    req.on('error', reject);
    req.on('close', () =>
      req.rstCode === 0 ? resolve(grpcStatus) : reject(new Error(`RST_STREAM ${req.rstCode}`)),
    );
    req.resume();
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

test('a URL as :authority is served, on every stream of the connection', async () => {
  const f = await startFixture();
  const session = http2.connect(`http://${f.address}`);
  try {
    for (let i = 0; i < 20; i++)
      assert.equal(await statusCall(session, `http://${f.address}`), '0', `call ${i}`);
  } finally {
    session.close();
    await f.close();
  }
});

test('a plain :authority passes through untouched', async () => {
  const f = await startFixture();
  const session = http2.connect(`http://${f.address}`);
  try {
    for (let i = 0; i < 5; i++) assert.equal(await statusCall(session, f.address), '0');
  } finally {
    session.close();
    await f.close();
  }
});

test('authorityOf keeps host:port and literal blocks encode lengths as HPACK integers', () => {
  assert.equal(authorityOf('http://127.0.0.1:2379'), '127.0.0.1:2379');
  assert.equal(authorityOf('https://h:1/path'), 'h:1');
  assert.equal(authorityOf('127.0.0.1:2379'), '127.0.0.1:2379');
  const block = encodeLiteralBlock([{ name: 'a', value: 'x'.repeat(200) }]);
  // 0x00, name length 1, 'a', value length 200 = 127 + 73 as a 7-bit-prefix integer.
  assert.deepEqual([...block.subarray(0, 5)], [0x00, 0x01, 0x61, 0x7f, 73]);
});
