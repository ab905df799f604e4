// Fuzzing what a member reads from its clients: protobuf requests to every method it serves (as
// grpc-js frames them), gRPC's length-prefixed messages (MessageReader), whole HTTP/2 connection
// openings mutated byte by byte, and JSON gateway bodies and HTTP/1.1 request heads. Every
// outcome is an answer (a status, an HTTP error) or a closed connection; never a handler that
// throws (call-scope.ts logs that as an error), an uncaught exception (it would end this test
// process), or a connection left hanging after the client has hung up. After each suite the
// port still serves a well-formed client.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { inspect } from 'node:util';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { serviceDefinition } from '../../src/server/api/protos.js';
import { GrpcWireError, MessageReader } from '../../src/server/api/grpc-wire.js';
import type { Fixture } from '../api/api-fixture.js';
import { b, startFixture } from '../api/api-fixture.js';
import { frame, FRAME, unaryRequest } from '../api/h2-raw-client.js';
import { decodesOrRefuses, fuzzParams, hostile, mutated } from './mutate.js';

/** Runs per property over real sockets: each is a connection or a call, a few ms each. */
const SOCKET_RUNS = 300;
/** A call or connection the server has not answered or closed by then is a hang. */
const ANSWER_MS = 10_000;
/** How long a gateway watch that asked for nothing is left open before the client goes. */
const WATCH_OPEN_MS = 300;

let f: Fixture;
before(async () => {
  f = await startFixture(undefined, { bcryptCost: 4 });
});
after(() => f.close());

/** A valid request per method, in proto-loader's objects; others are fuzzed from `{}`. */
const SAMPLES: Readonly<Record<string, object>> = {
  '/etcdserverpb.KV/Range': { key: b('a'), range_end: b('z'), limit: 5, sort_order: 'ASCEND' },
  '/etcdserverpb.KV/Put': { key: b('k'), value: b('v'), prev_kv: true },
  '/etcdserverpb.KV/DeleteRange': { key: b('a'), range_end: b('b'), prev_kv: true },
  '/etcdserverpb.KV/Txn': {
    compare: [{ key: b('k'), target: 'VALUE', result: 'EQUAL', value: b('v') }],
    success: [{ request_put: { key: b('k'), value: b('w') } }],
    failure: [{ request_range: { key: b('k') } }, { request_txn: { success: [] } }],
  },
  '/etcdserverpb.KV/Compact': { revision: 1 },
  '/etcdserverpb.Lease/LeaseGrant': { TTL: 30 },
  '/etcdserverpb.Lease/LeaseRevoke': { ID: 1 },
  '/etcdserverpb.Lease/LeaseTimeToLive': { ID: 1, keys: true },
  '/etcdserverpb.Lease/LeaseLeases': {},
  '/etcdserverpb.Cluster/MemberList': {},
  '/etcdserverpb.Maintenance/Status': {},
  '/etcdserverpb.Maintenance/Alarm': { action: 'GET' },
  '/etcdserverpb.Auth/UserAdd': { name: 'u', password: 'p' },
  '/etcdserverpb.Auth/UserGet': { name: 'u' },
  '/etcdserverpb.Auth/RoleAdd': { name: 'r' },
  '/etcdserverpb.Auth/RoleGrantPermission': {
    name: 'r',
    perm: { permType: 'READWRITE', key: b('a'), range_end: b('b') },
  },
  '/etcdserverpb.Auth/UserGrantRole': { user: 'u', role: 'r' },
};
const PATHS = Object.keys(SAMPLES);

function serialize(path: string, req: object): Buffer {
  const [, service = '', name = ''] = path.split('/');
  const m = serviceDefinition(service)[name];
  assert.ok(m !== undefined, path);
  return m.requestSerialize(req);
}

const requestArb = fc.constantFrom(...PATHS).chain((path) =>
  hostile(fc.constant(new Uint8Array(serialize(path, SAMPLES[path] ?? {}))), 64).map((bytes) => ({
    path,
    bytes: Buffer.from(bytes),
  })),
);

/** A unary call with raw request bytes; its status code (0 for an answer). */
function rawUnary(path: string, bytes: Buffer): Promise<number> {
  return new Promise((resolve) => {
    f.client.raw.makeUnaryRequest(
      path,
      (x: Buffer) => x,
      (x: Buffer) => x,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + ANSWER_MS },
      (err) => resolve(err === null ? grpc.status.OK : err.code),
    );
  });
}

/** Handler failures the server survived: each is a bug (call-scope.ts logs them as errors). */
function handlerBugs(): string[] {
  return f.log.lines.filter((l) => l.level === 'error').map((l) => `${l.msg} ${inspect(l.obj)}`);
}

async function stillServes(): Promise<void> {
  const put = await f.client.unary('/etcdserverpb.KV/Put', { key: b('probe'), value: b('1') });
  assert.equal(put.error, undefined, JSON.stringify(put.error));
  const h = await fetch(`http://${f.address}/health`, { signal: AbortSignal.timeout(ANSWER_MS) });
  assert.equal(h.status, 200);
}

test('protobuf requests, mutated, to every served method: a status each, no handler bug', async () => {
  await fc.assert(
    fc.asyncProperty(requestArb, async ({ path, bytes }) => {
      const code = await rawUnary(path, bytes);
      assert.notEqual(code, grpc.status.DEADLINE_EXCEEDED, `${path} ${bytes.toString('hex')}`);
      assert.deepEqual(handlerBugs(), [], `${path} ${bytes.toString('hex')}`);
    }),
    fuzzParams(SOCKET_RUNS),
  );
  await stillServes();
});

test('gRPC length-prefixed messages: whole messages, or GrpcWireError, however split', () => {
  const message = fc.uint8Array({ maxLength: 64 }).map((body) => {
    const out = Buffer.alloc(5 + body.length);
    out.writeUInt32BE(body.length, 1);
    out.set(body, 5);
    return out;
  });
  const gzipped = fc.uint8Array({ maxLength: 64 }).map((body) => {
    const z = gzipSync(body);
    const out = Buffer.alloc(5 + z.length);
    out[0] = 1;
    out.writeUInt32BE(z.length, 1);
    z.copy(out, 5);
    return out;
  });
  const stream = fc
    .array(fc.oneof(message, gzipped), { minLength: 1, maxLength: 4 })
    .map((ms) => new Uint8Array(Buffer.concat(ms)));
  fc.assert(
    fc.property(
      hostile(stream),
      fc.array(fc.nat(), { maxLength: 4 }),
      fc.constantFrom('gzip', 'deflate', 'snappy', undefined),
      (bytes, cuts, encoding) => {
        const reader = new MessageReader(1024, encoding);
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
        let from = 0;
        decodesOrRefuses(
          () => {
            for (const to of [...at, bytes.length]) {
              for (const m of reader.push(Buffer.from(bytes.subarray(from, to))))
                assert.ok(m.length <= 1024, 'a message past the limit was passed on');
              from = to;
            }
          },
          [GrpcWireError],
          bytes,
        );
      },
    ),
    fuzzParams(),
  );
});

/** A client's whole opening: preface, SETTINGS, a unary call and a second one on stream 3. */
function opening(path: string, message: Buffer): Uint8Array {
  return new Uint8Array(
    Buffer.concat([
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
      frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)),
      unaryRequest(1, path, message),
      unaryRequest(3, '/etcdserverpb.KV/Range', serialize('/etcdserverpb.KV/Range', {})),
    ]),
  );
}

/** Write `bytes`, hang up our side, and wait for the server to close: false if it never does. */
function sendAndHangUp(bytes: Uint8Array): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(f.port, '127.0.0.1', () => {
      socket.write(bytes);
      socket.end();
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, ANSWER_MS);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

test('HTTP/2 openings mutated byte by byte: answered or closed, never a hang', async () => {
  const openingArb = fc
    .constantFrom(...PATHS)
    .map((path) => opening(path, serialize(path, SAMPLES[path] ?? {})));
  await fc.assert(
    fc.asyncProperty(mutated(openingArb), async (bytes) => {
      const closed = await sendAndHangUp(bytes);
      assert.ok(closed, `connection left open: ${Buffer.from(bytes).toString('hex')}`);
      assert.deepEqual(handlerBugs(), []);
    }),
    fuzzParams(SOCKET_RUNS),
  );
  await stillServes();
});

/** JSON gateway routes with a valid body each (grpc-gateway's JSON, bytes in base64). */
const GATEWAY: readonly (readonly [string, object])[] = [
  ['/v3/kv/range', { key: 'YQ==', range_end: 'eg==', limit: 3 }],
  ['/v3/kv/put', { key: 'aw==', value: 'dg==', prev_kv: true }],
  ['/v3/kv/deleterange', { key: 'YQ==', range_end: 'Yg==' }],
  [
    '/v3/kv/txn',
    {
      compare: [{ key: 'aw==', target: 'VERSION', result: 'GREATER', version: '0' }],
      success: [{ request_range: { key: 'aw==' } }],
    },
  ],
  ['/v3/lease/grant', { TTL: '30' }],
  ['/v3/lease/timetolive', { ID: '1', keys: true }],
  ['/v3/maintenance/status', {}],
  ['/v3/cluster/member/list', {}],
  ['/v3/watch', { create_request: { key: 'YQ==' } }],
];

test('JSON gateway bodies, mutated: an HTTP answer each, no handler bug', async () => {
  const bodyArb = fc.constantFrom(...GATEWAY).chain(([path, body]) =>
    hostile(fc.constant(new Uint8Array(Buffer.from(JSON.stringify(body)))), 64).map((bytes) => ({
      path,
      bytes,
    })),
  );
  await fc.assert(
    fc.asyncProperty(bodyArb, async ({ path, bytes }) => {
      const watch = path === '/v3/watch';
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), watch ? WATCH_OPEN_MS : ANSWER_MS);
      try {
        const res = await fetch(`http://${f.address}${path}`, {
          method: 'POST',
          body: bytes,
          signal: controller.signal,
        });
        // A watch answers with a stream that stays open: its first line is the answer.
        if (watch && res.status === 200) await res.body?.cancel();
        else await res.arrayBuffer();
        assert.ok(res.status < 500 || res.status === 503, `${path}: ${res.status}`);
      } catch (e) {
        // A watch request that asks for nothing (no create, cancel or progress request) is
        // ignored, as etcd ignores it: the stream stays open with nothing to say.
        if (!(watch && controller.signal.aborted)) throw e;
      } finally {
        clearTimeout(timer);
      }
      assert.deepEqual(handlerBugs(), [], `${path} ${Buffer.from(bytes).toString()}`);
    }),
    fuzzParams(SOCKET_RUNS),
  );
  await stillServes();
});

test('HTTP/1.1 request heads, mutated: answered or closed, never a hang', async () => {
  const head = fc.constantFrom(...GATEWAY).map(([path, body]) => {
    const text = JSON.stringify(body);
    return new Uint8Array(
      Buffer.from(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      ),
    );
  });
  await fc.assert(
    fc.asyncProperty(mutated(head), async (bytes) => {
      const closed = await sendAndHangUp(bytes);
      assert.ok(closed, `connection left open: ${Buffer.from(bytes).toString('latin1')}`);
    }),
    fuzzParams(SOCKET_RUNS),
  );
  assert.deepEqual(handlerBugs(), []);
  await stillServes();
});
