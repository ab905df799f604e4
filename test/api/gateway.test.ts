// The JSON gateway and gRPC on one port (etcd's server/embed/serve.go: grpcHandlerFunc,
// registerGateway, createMux): protojson in and out, the watch stream as JSON lines,
// grpc-gateway's error shape, /health and /version, and bad input answered with 4xx instead of
// crashing the server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Fixture } from './api-fixture.js';
import { b, startFixture, text } from './api-fixture.js';
import { LineSplitter } from '../../src/launcher/lines.js';

let f: Fixture;
let base: string;
before(async () => {
  f = await startFixture();
  base = `http://${f.address}`;
});
after(() => f.close());

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A parsed JSON body, loosely typed: any member may be missing at run time. */
interface Json {
  readonly [key: string]: Json | undefined;
}
/** A string leaf of a JSON body as text ('' when absent). */
const str = (x: Json | undefined): string => (typeof x === 'string' ? x : '');
const unb64 = (x: Json | undefined): string => Buffer.from(str(x), 'base64').toString();

async function post(path: string, body: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

test('put and range with base64 bytes and string int64s; /v3beta is an alias', async () => {
  const put = await post('/v3/kv/put', { key: b64('g1'), value: b64('hello') });
  assert.equal(put.status, 200);
  assert.equal(put.json['header']?.['revision'], '2');
  const range = await post('/v3beta/kv/range', { key: b64('g1'), unknown_field: 1 });
  assert.equal(range.status, 200);
  assert.equal(range.json['count'], '1');
  assert.equal(unb64(range.json['kvs']?.[0]?.['value']), 'hello');
  assert.equal(range.json['kvs']?.[0]?.['create_revision'], '2');
  assert.equal(range.json['more'], undefined, 'zero values are omitted');
  // The gRPC side of the same port sees the write.
  const viaGrpc = await f.client.ok('/etcdserverpb.KV/Range', { key: b('g1') });
  assert.equal(text((viaGrpc['kvs'] as { value: Buffer }[])[0]?.value), 'hello');
});

test('errors: grpc-gateway status mapping and body', async () => {
  const r = await post('/v3/kv/range', { key: '' });
  assert.equal(r.status, 400);
  assert.deepEqual(r.json, {
    error: 'etcdserver: key is not provided',
    code: 3,
    message: 'etcdserver: key is not provided',
  });
  const lease = await post('/v3/lease/revoke', { ID: '42' });
  assert.equal(lease.status, 404);
  assert.equal(lease.json['message'], 'etcdserver: requested lease not found');
  const auth = await post('/v3/auth/status', {});
  assert.equal(auth.status, 501);
  const missing = await post('/v3/nowhere', {});
  assert.equal(missing.status, 404);
});

test('bad JSON and wrong shapes are 400, and the server keeps serving', async () => {
  const bad = await post('/v3/kv/range', '{not json');
  assert.equal(bad.status, 400);
  assert.match(str(bad.json['error']), /invalid JSON/);
  const shape = await post('/v3/kv/txn', { compare: 'nope' });
  assert.equal(shape.status, 400);
  const arr = await post('/v3/kv/put', [1, 2]);
  assert.equal(arr.status, 400);
  const ok = await post('/v3/kv/range', { key: b64('g1') });
  assert.equal(ok.status, 200);
});

test('a body over the size limit is refused', async () => {
  const huge = 'x'.repeat(3 * 1024 * 1024);
  const r = await post('/v3/kv/put', { key: b64('k'), value: huge });
  assert.equal(r.status, 413);
  const big = Buffer.alloc(1.6 * 1024 * 1024, 1).toString('base64');
  const r2 = await post('/v3/kv/put', { key: b64('k'), value: big });
  assert.equal(r2.status, 400);
  assert.equal(r2.json['message'], 'etcdserver: request is too large');
});

test('lease grant and keepalive; txn; status, member list, alarm', async () => {
  const grant = await post('/v3/lease/grant', { TTL: '20' });
  assert.equal(grant.json['TTL'], '20');
  const ka = await fetch(`${base}/v3/lease/keepalive`, {
    method: 'POST',
    body: JSON.stringify({ ID: grant.json['ID'] }),
  });
  const line = JSON.parse((await ka.text()).trim()) as Json;
  assert.equal(line['result']?.['TTL'], '20');
  const txn = await post('/v3/kv/txn', {
    compare: [{ key: b64('g1'), target: 'VALUE', result: 'EQUAL', value: b64('hello') }],
    success: [{ request_put: { key: b64('g2'), value: b64('x') } }],
  });
  assert.equal(txn.json['succeeded'], true);
  assert.ok(txn.json['responses']?.[0]?.['response_put']?.['header']);
  const status = await post('/v3/maintenance/status', {});
  assert.equal(status.json['version'], '3.4.0');
  const members = await post('/v3/cluster/member/list', {});
  assert.equal(members.json['members']?.[0]?.['ID'], '1');
  const alarm = await post('/v3/maintenance/alarm', {});
  assert.equal(alarm.json['alarms'], undefined);
});

test('GET /health and /version', async () => {
  assert.deepEqual(await (await fetch(`${base}/health`)).json(), { health: 'true' });
  assert.deepEqual(await (await fetch(`${base}/version`)).json(), {
    etcdserver: '3.4.0',
    etcdcluster: '3.4.0',
  });
});

test('watch streams {"result": ...} lines until the client goes away', async () => {
  const abort = new AbortController();
  const res = await fetch(`${base}/v3/watch`, {
    method: 'POST',
    body: JSON.stringify({ create_request: { key: b64('gw'), prev_kv: true } }),
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  assert.ok(res.body);
  const chunks = (res.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const lines: Json[] = [];
  const splitter = new LineSplitter();
  const pending: string[] = [];
  const nextLine = async (): Promise<Json> => {
    while (pending.length === 0) {
      const chunk = await chunks.next();
      assert.equal(chunk.done, false);
      pending.push(...splitter.push(Buffer.from(chunk.value)));
    }
    return JSON.parse(pending.shift() ?? '') as Json;
  };
  lines.push(await nextLine());
  assert.equal(lines[0]?.['result']?.['created'], true);
  await post('/v3/kv/put', { key: b64('gw'), value: b64('1') });
  await post('/v3/kv/put', { key: b64('gw'), value: b64('2') });
  const events: Json[] = [];
  while (events.length < 2) {
    const result = (await nextLine())['result'];
    events.push(...((result?.['events'] ?? []) as Json[]));
  }
  assert.equal(events[0]?.['type'], undefined, 'PUT is the zero enum value, omitted');
  assert.equal(unb64(events[1]?.['kv']?.['value']), '2');
  assert.equal(unb64(events[1]?.['prev_kv']?.['value']), '1');
  abort.abort();
  await chunks.return?.().catch(() => {});
});
