// Malformed input on the client port never takes the server down: garbage bytes, a truncated
// HTTP/2 preface, undecodable protobuf, malformed HTTP. After each, the port still serves both
// gRPC and HTTP/1.1.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { Fixture } from './api-fixture.js';
import { b, startFixture } from './api-fixture.js';

let f: Fixture;
before(async () => {
  f = await startFixture();
});
after(() => f.close());

/** Write bytes on a fresh connection and wait until the server closes it (or we give up). */
function sendRaw(port: number, bytes: Buffer, endAfterWrite = true): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      if (endAfterWrite) socket.end();
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

async function stillServes(): Promise<void> {
  const r = await f.client.ok('/etcdserverpb.KV/Range', { key: b('k') });
  assert.ok(r['header']);
  const h = await fetch(`http://${f.address}/health`);
  assert.equal(h.status, 200);
}

test('garbage bytes get a 400 from the HTTP side and the server keeps serving', async () => {
  const reply = await sendRaw(f.port, Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x0d, 0x0a]));
  assert.match(reply.toString('latin1'), /^HTTP\/1\.1 400/);
  await stillServes();
});

test('a truncated HTTP/2 preface and a preface followed by garbage', async () => {
  await sendRaw(f.port, Buffer.from('PRI * HTTP/2.0\r\n'));
  await sendRaw(
    f.port,
    Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.alloc(64, 0xee)]),
  );
  await stillServes();
});

test('undecodable protobuf in a gRPC request is a status, not a crash', async () => {
  const err = await new Promise<grpc.ServiceError | null>((resolve) => {
    f.client.raw.makeUnaryRequest(
      '/etcdserverpb.KV/Put',
      (x: Buffer) => x,
      (x: Buffer) => x,
      Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]),
      (e) => resolve(e),
    );
  });
  assert.ok(err);
  assert.notEqual(err.code, grpc.status.OK);
  await stillServes();
});

test('malformed HTTP/1.1 request line and headers', async () => {
  const reply = await sendRaw(
    f.port,
    Buffer.from('POST /v3/kv/range HTTP/1.1\r\nContent-Length: x\r\n\r\n'),
  );
  assert.match(reply.toString('latin1'), /^HTTP\/1\.1 400/);
  await stillServes();
});
