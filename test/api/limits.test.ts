// The client port's limits on one client (issue 17: "abuse by one client never costs others"):
// connections per address and still opening, streams per connection, watches and keepalive
// streams per connection, request bytes on both sides of the port, and clients that never read
// their answers. Each test lowers one limit (api-config.ts), shows the refusal's exact form, and
// shows another client served meanwhile. Memory is measured through the server's own count of
// what each connection holds (ClientApi.connections(), connection-limits.ts), never through RSS
// or timing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tls from 'node:tls';
import { status } from '@grpc/grpc-js';
import type { ClientApiConfig } from '../../src/server/api/api-config.js';
import { DEFAULT_CLIENT_API_CONFIG } from '../../src/server/api/api-config.js';
import {
  connectionUnsentRefusal,
  keepAliveLimitRefusal,
  watchLimitReason,
} from '../../src/server/api/connection-limits.js';
import type { ConnectionStats } from '../../src/server/api/connection-limits.js';
import { startClientApi } from '../../src/server/api/client-listener.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import { serviceDefinition } from '../../src/server/api/protos.js';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';
import type { Fixture, Obj } from './api-fixture.js';
import { b, RawClient, RecordingLogger, startFixture, text } from './api-fixture.js';
import {
  FLAG,
  FRAME,
  frame,
  H2_NO_ERROR,
  H2_REFUSED_STREAM,
  messageFrame,
  RawH2Client,
  requestHeaders,
  rstStream,
  streamEnd,
  unaryRequest,
  windowUpdate,
} from './h2-raw-client.js';

const KV = '/etcdserverpb.KV';
const LEASE = '/etcdserverpb.Lease';
const WATCH = '/etcdserverpb.Watch/Watch';
const RANGE = `${KV}/Range`;
const ELECTION = '/v3electionpb.Election';

function codec(path: string): {
  requestSerialize: (v: object) => Buffer;
  responseDeserialize: (b: Buffer) => unknown;
} {
  const [, service = '', name = ''] = path.split('/');
  const m = serviceDefinition(service)[name];
  if (m === undefined) throw new Error(`no method ${path}`);
  return m;
}

/** A grpc-js client on a connection of its own. */
const ownClient = (f: Fixture): RawClient =>
  new RawClient(f.address, { 'grpc.use_local_subchannel_pool': 1 });

async function start(config: Partial<ClientApiConfig>): Promise<Fixture> {
  return startFixture(undefined, config);
}

/** Wait (no time limit but the test's) until `cond` holds; polled every few ms. */
async function waitUntil(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`still not ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The server's view of the connection whose client side is `localPort`. */
function connectionOf(f: Fixture, localPort: number): ConnectionStats {
  const c = f.api.connections().find((x) => x.remotePort === localPort);
  if (c === undefined) throw new Error(`no server connection from port ${localPort}`);
  return c;
}

/** A TCP connection that sends nothing; resolves once connected. */
function idleSocket(port: number, localAddress = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Whether the server closes `s` before it sends a byte. */
function closedUnanswered(s: net.Socket): Promise<boolean> {
  return new Promise((resolve) => {
    let got = 0;
    s.on('data', (d: Buffer) => (got += d.length));
    s.on('error', () => undefined);
    s.once('close', () => resolve(got === 0));
  });
}

/** One HTTP/1.1 exchange on a fresh connection from `localAddress`; the whole reply as text. */
function httpExchange(port: number, request: string, localAddress = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => s.end(request));
    s.on('data', (d: Buffer) => chunks.push(d));
    s.once('error', reject);
    s.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

const HEALTH = 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

async function assertServed(f: Fixture, client: RawClient = f.client): Promise<void> {
  const key = b(`served-${Math.random()}`);
  await client.ok(`${KV}/Put`, { key, value: b('v') });
  const r = await client.ok(RANGE, { key });
  assert.equal(text((r['kvs'] as Obj[])[0]?.['value']), 'v');
}

test('connections per address: one over the cap is closed unanswered, logged once', async () => {
  const f = await start({ connectionsPerAddressMax: 3 });
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; i < 3; i++) sockets.push(await idleSocket(f.port));
    await waitUntil('3 connections admitted', () => f.api.connections().length === 3);
    const refused = [];
    for (let i = 0; i < 3; i++) {
      const s = await idleSocket(f.port);
      sockets.push(s);
      refused.push(closedUnanswered(s));
    }
    assert.deepEqual(await Promise.all(refused), [true, true, true]);
    assert.equal(f.api.connections().length, 3);
    const lines = f.log.lines.filter((l) => l.msg.startsWith('client API: connection refused'));
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.obj]),
      [
        [
          'warn',
          'client API: connection refused: too many connections from this address',
          {
            address: '127.0.0.1',
            count: 3,
            limit: 3,
            flag: '--max-connections-per-address',
            refusedSinceLastLog: 0,
          },
        ],
      ],
      'three refusals, one log line',
    );
    // Another address is its own count: served while 127.0.0.1 is at its cap.
    const other = await httpExchange(f.port, HEALTH, '127.0.0.2');
    assert.match(other, /^HTTP\/1\.1 200 /);
    // One of the three goes: a new connection from 127.0.0.1 is served again.
    (sockets[0] as net.Socket).destroy();
    await waitUntil('the closed one forgotten', () => f.api.connections().length < 3);
    assert.match(await httpExchange(f.port, HEALTH), /^HTTP\/1\.1 200 /);
  } finally {
    for (const s of sockets) s.destroy();
    await f.close();
  }
});

test('TLS: a connection over the per-address cap is refused before its handshake', async () => {
  const dir = join(process.cwd(), 'testdata', 'tls');
  const log = new RecordingLogger();
  const api = await startClientApi({
    backend: new MemoryBackend(),
    urls: ['https://127.0.0.1:0'],
    tls: { certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') },
    log,
    config: { connectionsPerAddressMax: 1 },
  });
  const port = api.ports[0] ?? 0;
  const ca = readFileSync(join(dir, 'ca.crt'));
  const sockets: net.Socket[] = [];
  try {
    const first = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({ port, host: '127.0.0.1', ca, servername: 'localhost' }, () =>
        resolve(s),
      );
      s.once('error', reject);
    });
    sockets.push(first);
    // A second one from the same address: closed with no ServerHello, nothing logged as TLS.
    const second = await idleSocket(port);
    sockets.push(second);
    second.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]));
    assert.equal(await closedUnanswered(second), true);
    assert.equal(log.lines.filter((l) => l.msg.includes('TLS handshake refused')).length, 0);
    assert.equal(log.lines.filter((l) => l.msg.includes('connection refused')).length, 1);
    // The first is served, and so is another address.
    first.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const reply = await new Promise<string>((resolve) => {
      let got = '';
      first.on('data', (d: Buffer) => (got += d.toString('latin1')));
      first.once('close', () => resolve(got));
    });
    assert.match(reply, /^HTTP\/1\.1 200 /);
    const other = await new Promise<number>((resolve, reject) => {
      const req = https.get(
        { host: '127.0.0.1', port, path: '/health', ca, localAddress: '127.0.0.2', agent: false },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.once('error', reject);
    });
    assert.equal(other, 200);
  } finally {
    for (const s of sockets) s.destroy();
    await api.close();
  }
});

test('connections still opening: over the cap new ones are refused, open ones served', async () => {
  const f = await start({ openingConnectionsMax: 2 });
  const sockets: net.Socket[] = [];
  try {
    await assertServed(f); // f.client's connection is open and identified (gRPC)
    for (let i = 0; i < 2; i++) sockets.push(await idleSocket(f.port));
    await waitUntil('2 silent connections opening', () => {
      return f.api.connections().filter((c) => c.protocol === 'opening').length === 2;
    });
    const s = await idleSocket(f.port, '127.0.0.3');
    sockets.push(s);
    assert.equal(await closedUnanswered(s), true);
    const line = f.log.lines.find((l) => l.msg.includes('too many connections still opening'));
    assert.deepEqual(line?.obj, {
      address: '127.0.0.3',
      count: 2,
      limit: 2,
      flag: '--max-opening-connections',
      refusedSinceLastLog: 0,
    });
    await assertServed(f);
    // A silent one goes (or says what it is): room for a new one.
    (sockets[0] as net.Socket).destroy();
    await waitUntil('one opening left', () => {
      return f.api.connections().filter((c) => c.protocol === 'opening').length === 1;
    });
    assert.match(await httpExchange(f.port, HEALTH), /^HTTP\/1\.1 200 /);
  } finally {
    for (const s of sockets) s.destroy();
    await f.close();
  }
});

test('streams per connection: SETTINGS_MAX_CONCURRENT_STREAMS, then REFUSED_STREAM', async () => {
  const f = await start({ streamsPerConnectionMax: 2 });
  const c = await RawH2Client.connect(f.port);
  try {
    await f.client.ok(`${KV}/Put`, { key: b('k'), value: b('v') });
    // Three Watch streams left open; this client never waits for the server's SETTINGS.
    c.send(
      Buffer.concat([requestHeaders(1, WATCH), requestHeaders(3, WATCH), requestHeaders(5, WATCH)]),
    );
    const settings = await c.waitFor(
      "the gRPC server's SETTINGS",
      (x) => x.type === FRAME.SETTINGS && (x.flags & FLAG.ACK) === 0 && x.payload.length > 0,
    );
    assert.deepEqual(settingsOf(settings.payload).get(0x3), 2, 'SETTINGS_MAX_CONCURRENT_STREAMS');
    const reset = await c.waitFor('the end of stream 5', streamEnd(5));
    assert.equal(reset.type, FRAME.RST_STREAM);
    assert.equal(reset.payload.readUInt32BE(0), H2_REFUSED_STREAM);
    // The other connection is served meanwhile.
    await assertServed(f);
    // One stream ends: a new call on this connection is served.
    c.send(rstStream(1, 0x8 /* CANCEL */));
    const range = codec(RANGE);
    c.send(unaryRequest(7, RANGE, range.requestSerialize({ key: b('k') })));
    const end = await c.waitFor('the end of stream 7', streamEnd(7));
    assert.equal(end.type, FRAME.HEADERS);
    assert.equal(end.headers?.get('grpc-status'), '0');
  } finally {
    c.destroy();
    await f.close();
  }
});

/** SETTINGS parameters by identifier (RFC 9113 §6.5.1). */
function settingsOf(payload: Buffer): Map<number, number> {
  const out = new Map<number, number>();
  for (let i = 0; i + 6 <= payload.length; i += 6) {
    out.set(payload.readUInt16BE(i), payload.readUInt32BE(i + 2));
  }
  return out;
}

test('watches per connection: a create over the cap is refused as etcd refuses one', async () => {
  const f = await start({ watchesPerConnectionMax: 3 });
  const other = ownClient(f);
  try {
    const w1 = f.client.bidi(WATCH);
    for (const key of ['a', 'b']) {
      w1.write({ create_request: { key: b(key) } });
      assert.equal((await w1.next())['created'], true);
    }
    // A second stream on the same connection shares the count.
    const w2 = f.client.bidi(WATCH);
    w2.write({ create_request: { key: b('c') } });
    const third = await w2.next();
    assert.equal(third['created'], true);
    w2.write({ create_request: { key: b('d') } });
    const refused = await w2.next();
    assert.deepEqual(
      {
        watch_id: refused['watch_id'],
        created: refused['created'],
        canceled: refused['canceled'],
        cancel_reason: refused['cancel_reason'],
      },
      { watch_id: '-1', created: true, canceled: true, cancel_reason: watchLimitReason(3) },
    );
    assert.equal(
      watchLimitReason(3),
      'tenure: too many watches on this connection (limit 3, --max-watches-per-connection)',
    );
    // The stream stays open and its watch still works.
    await f.client.ok(`${KV}/Put`, { key: b('c'), value: b('1') });
    const event = ((await w2.next())['events'] as Obj[])[0];
    assert.equal(text((event?.['kv'] as Obj | undefined)?.['key']), 'c');
    // Another connection has its own count.
    const w3 = other.bidi(WATCH);
    w3.write({ create_request: { key: b('e') } });
    assert.equal((await w3.next())['created'], true);
    await assertServed(f, other);
    // A cancel gives the room back.
    w1.write({ cancel_request: { watch_id: '0' } });
    assert.equal((await w1.next())['canceled'], true);
    w2.write({ create_request: { key: b('f') } });
    const again = await w2.next();
    assert.equal(again['created'], true);
    assert.equal(again['canceled'], false);
    w1.cancel();
    w2.cancel();
    w3.cancel();
  } finally {
    other.close();
    await f.close();
  }
});

test('keepalive streams per connection: one more ends with RESOURCE_EXHAUSTED', async () => {
  const f = await start({ keepAliveStreamsPerConnectionMax: 2 });
  const other = ownClient(f);
  try {
    const id = (await f.client.ok(`${LEASE}/LeaseGrant`, { TTL: 30 }))['ID'] as string;
    const streams = [
      f.client.bidi(`${LEASE}/LeaseKeepAlive`),
      f.client.bidi(`${LEASE}/LeaseKeepAlive`),
    ];
    for (const s of streams) {
      s.write({ ID: id });
      assert.equal((await s.next())['TTL'], '30');
    }
    const third = f.client.bidi(`${LEASE}/LeaseKeepAlive`);
    third.write({ ID: id });
    assert.deepEqual(await third.status(), {
      code: status.RESOURCE_EXHAUSTED,
      details: keepAliveLimitRefusal(2),
    });
    assert.equal(
      keepAliveLimitRefusal(2),
      'tenure: too many LeaseKeepAlive streams on this connection (limit 2, ' +
        '--max-lease-keepalive-streams-per-connection)',
    );
    // The two open streams still renew; another connection opens its own.
    const s0 = streams[0] as (typeof streams)[0];
    s0.write({ ID: id });
    assert.equal((await s0.next())['TTL'], '30');
    const theirs = other.bidi(`${LEASE}/LeaseKeepAlive`);
    theirs.write({ ID: id });
    assert.equal((await theirs.next())['TTL'], '30');
    // One closes: room for a new one on this connection.
    s0.cancel();
    const ours = (): ConnectionStats | undefined =>
      f.api.connections().find((c) => c.keepAliveStreams === 2);
    await waitUntil('a keepalive stream released', () => ours() === undefined);
    const fourth = f.client.bidi(`${LEASE}/LeaseKeepAlive`);
    fourth.write({ ID: id });
    assert.equal((await fourth.next())['TTL'], '30');
    for (const s of [streams[1], fourth, theirs]) s?.cancel();
  } finally {
    other.close();
    await f.close();
  }
});

test('a connection over its unsent bytes gets no new calls until its client reads', async () => {
  const unsentMax = 64 * 1024;
  const f = await start({ connectionUnsentBytesMax: unsentMax });
  const c = await RawH2Client.connect(f.port);
  try {
    await f.client.ok(`${KV}/Put`, { key: b('big'), value: Buffer.alloc(300 * 1024, 1) });
    const range = codec(RANGE);
    // The answer is 300 KiB; the client's windows (64 KiB) let a fifth of it out.
    c.send(unaryRequest(1, RANGE, range.requestSerialize({ key: b('big') })));
    await c.waitFor('the answer on stream 1', (x) => x.streamId === 1 && x.type === FRAME.DATA);
    await waitUntil(
      'the answer counted',
      () => connectionOf(f, c.localPort).unsentBytes > unsentMax,
    );
    c.send(unaryRequest(3, RANGE, range.requestSerialize({ key: b('k') })));
    const refused = await c.waitFor('the end of stream 3', streamEnd(3));
    assert.equal(refused.headers?.get('grpc-status'), String(status.RESOURCE_EXHAUSTED));
    assert.equal(refused.headers?.get('grpc-message'), connectionUnsentRefusal(unsentMax));
    assert.equal(
      connectionUnsentRefusal(unsentMax),
      `tenure: this connection holds more than ${unsentMax} bytes of answers its client has not ` +
        'read (--max-connection-unsent-bytes); read them before calling again',
    );
    await assertServed(f);
    // The client reads: window for the whole answer, which leaves, and calls are served again.
    c.send(Buffer.concat([windowUpdate(0, 1024 * 1024), windowUpdate(1, 1024 * 1024)]));
    const done = await c.waitFor('the end of stream 1', streamEnd(1));
    assert.equal(done.headers?.get('grpc-status'), '0');
    await waitUntil('nothing unsent', () => connectionOf(f, c.localPort).unsentBytes === 0);
    c.send(unaryRequest(5, RANGE, range.requestSerialize({ key: b('k') })));
    assert.equal((await c.waitFor('stream 5', streamEnd(5))).headers?.get('grpc-status'), '0');
  } finally {
    c.destroy();
    await f.close();
  }
});

const VALUE_BYTES = 100 * 1000;
const WRITTEN_BYTES = 20 * 1000 * 1000;

/**
 * Write WRITTEN_BYTES of values under `prefix` from `writer`, checking after every 2 MB that
 * `bystander` (its own connection) is served and that the slow connection holds no more than
 * `bound` says; returns the largest holdings seen.
 */
async function writeWhileWatching(
  f: Fixture,
  prefix: string,
  writer: RawClient,
  bystander: RawClient,
  holding: () => ConnectionStats,
  bound: { readonly unsentBytes: number; readonly watchQueuedBytes: number },
): Promise<{ unsentBytes: number; watchQueuedBytes: number }> {
  const value = Buffer.alloc(VALUE_BYTES, 0x61);
  const most = { unsentBytes: 0, watchQueuedBytes: 0 };
  for (let i = 0; i < WRITTEN_BYTES / VALUE_BYTES; i++) {
    await writer.ok(`${KV}/Put`, { key: b(`${prefix}${i % 50}`), value });
    if (i % 20 === 19) {
      await assertServed(f, bystander);
      const h = holding();
      most.unsentBytes = Math.max(most.unsentBytes, h.unsentBytes);
      most.watchQueuedBytes = Math.max(most.watchQueuedBytes, h.watchQueuedBytes);
      assert.ok(h.unsentBytes <= bound.unsentBytes, `unsent ${h.unsentBytes} after ${i + 1} puts`);
      assert.ok(
        h.watchQueuedBytes <= bound.watchQueuedBytes,
        `watch queue ${h.watchQueuedBytes} bytes after ${i + 1} puts`,
      );
    }
  }
  return most;
}

test('a gRPC watcher that never reads: what its connection holds stays bounded', async () => {
  const watchQueueBytesMax = 1024 * 1024;
  const f = await start({ watchQueueBytesMax });
  const c = await RawH2Client.connect(f.port);
  const writer = ownClient(f);
  const bystander = ownClient(f);
  try {
    const watch = codec(WATCH);
    const create = watch.requestSerialize({
      create_request: { key: b('slow/'), range_end: b('slow0') },
    });
    c.send(Buffer.concat([requestHeaders(1, WATCH), messageFrame(1, create, false)]));
    await c.waitFor('the created response', (x) => x.streamId === 1 && x.type === FRAME.DATA);
    // From here on the client reads nothing and grants no window.
    c.pause();
    const holding = (): ConnectionStats => connectionOf(f, c.localPort);
    const perStream = DEFAULT_CLIENT_API_CONFIG.streamQueuedBytesMax + 2 * (VALUE_BYTES + 1024);
    const most = await writeWhileWatching(f, 'slow/', writer, bystander, holding, {
      unsentBytes: perStream,
      watchQueuedBytes: watchQueueBytesMax + VALUE_BYTES + 64,
    });
    assert.equal(holding().watches, 1);
    // It did hold something: the bound was reached, not trivially met.
    assert.ok(
      most.unsentBytes > DEFAULT_CLIENT_API_CONFIG.streamQueuedBytesMax / 2,
      `${most.unsentBytes}`,
    );
    assert.ok(most.watchQueuedBytes >= watchQueueBytesMax, `${most.watchQueuedBytes}`);
    // Gone: the member lets go of all of it.
    c.destroy();
    await waitUntil('the connection released', () => {
      return !f.api.connections().some((x) => x.remotePort === c.localPort);
    });
  } finally {
    c.destroy();
    writer.close();
    bystander.close();
    await f.close();
  }
});

test('a gateway watcher that never reads: its socket buffer stays bounded', async () => {
  const watchQueueBytesMax = 1024 * 1024;
  const f = await start({ watchQueueBytesMax });
  const writer = ownClient(f);
  const bystander = ownClient(f);
  const body = JSON.stringify({
    create_request: { key: b('gw/').toString('base64'), range_end: b('gw0').toString('base64') },
  });
  const s = await new Promise<net.Socket>((resolve) => {
    const sock = net.connect(f.port, '127.0.0.1', () => resolve(sock));
  });
  try {
    let head = '';
    const created = new Promise<void>((resolve) => {
      const onData = (d: Buffer): void => {
        head += d.toString('latin1');
        if (head.includes('"created":true')) {
          s.off('data', onData);
          resolve();
        }
      };
      s.on('data', onData);
    });
    s.write(
      `POST /v3/watch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await created;
    s.pause(); // never read again
    const holding = (): ConnectionStats => connectionOf(f, s.localPort ?? 0);
    // JSON carries values in base64: a line is 4/3 of a value, plus the socket's high-water mark.
    const line = Math.ceil((VALUE_BYTES * 4) / 3) + 1024;
    const most = await writeWhileWatching(f, 'gw/', writer, bystander, holding, {
      unsentBytes: 64 * 1024 + 2 * line,
      watchQueuedBytes: watchQueueBytesMax + VALUE_BYTES + 64,
    });
    assert.equal(holding().watches, 1);
    assert.ok(most.unsentBytes > 0, 'the kernel took it all: the test measured nothing');
  } finally {
    s.destroy();
    writer.close();
    bystander.close();
    await f.close();
  }
});

test('an Observe stream that never reads: its connection holds one answer or so', async () => {
  const f = await start({});
  const c = await RawH2Client.connect(f.port);
  const other = ownClient(f);
  try {
    const lease = (await f.client.ok(`${LEASE}/LeaseGrant`, { TTL: 60 }))['ID'] as string;
    const campaign = await f.client.ok(`${ELECTION}/Campaign`, {
      name: b('e'),
      lease,
      value: b('first'),
    });
    const leader = campaign['leader'];
    const observe = codec(`${ELECTION}/Observe`);
    c.send(unaryRequest(1, `${ELECTION}/Observe`, observe.requestSerialize({ name: b('e') })));
    await c.waitFor('the first leader value', (x) => x.streamId === 1 && x.type === FRAME.DATA);
    c.pause();
    const value = Buffer.alloc(1000 * 1000, 0x62);
    const bound = DEFAULT_CLIENT_API_CONFIG.streamQueuedBytesMax + 2 * (value.length + 1024);
    let most = 0;
    for (let i = 0; i < 20; i++) {
      await f.client.ok(`${ELECTION}/Proclaim`, { leader, value });
      await assertServed(f, other);
      most = Math.max(most, connectionOf(f, c.localPort).unsentBytes);
      assert.ok(most <= bound, `unsent ${most} after ${i + 1} proclaims of 1 MB`);
    }
    assert.ok(most > value.length, `${most}`);
  } finally {
    c.destroy();
    other.close();
    await f.close();
  }
});

test('gRPC: a length prefix over the limit is refused before its bytes arrive', async () => {
  const f = await start({});
  const c = await RawH2Client.connect(f.port);
  try {
    // HEADERS and a DATA frame holding only the 5-byte prefix of a 100 MiB message.
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(100 * 1024 * 1024, 1);
    c.send(Buffer.concat([requestHeaders(1, `${KV}/Put`), frame(FRAME.DATA, 0, 1, prefix)]));
    const end = await c.waitFor('the end of stream 1', (x) => {
      return x.streamId === 1 && x.type === FRAME.HEADERS && (x.flags & FLAG.END_STREAM) !== 0;
    });
    const limit =
      DEFAULT_CLIENT_API_CONFIG.requestBytesMax + DEFAULT_CLIENT_API_CONFIG.grpcOverheadBytes;
    assert.equal(end.headers?.get('grpc-status'), String(status.RESOURCE_EXHAUSTED));
    assert.equal(
      end.headers?.get('grpc-message'),
      `Received message larger than max (${100 * 1024 * 1024} vs. ${limit})`,
    );
    // The server tells the client to stop sending the rest.
    const rst = await c.waitFor('RST_STREAM on stream 1', (x) => {
      return x.streamId === 1 && x.type === FRAME.RST_STREAM;
    });
    assert.equal(rst.payload.readUInt32BE(0), H2_NO_ERROR);
    await assertServed(f);
    // The same connection still serves other calls.
    await f.client.ok(`${KV}/Put`, { key: b('k'), value: b('v') });
    c.send(unaryRequest(3, RANGE, codec(RANGE).requestSerialize({ key: b('k') })));
    assert.equal((await c.waitFor('stream 3', streamEnd(3))).headers?.get('grpc-status'), '0');
  } finally {
    c.destroy();
    await f.close();
  }
});

test('gateway: an oversize body is refused with 413 and the connection cut off early', async () => {
  const f = await start({});
  try {
    // Announced: refused before a byte of the body is read.
    const announced = await httpExchange(
      f.port,
      `POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`,
    );
    assert.match(announced, /^HTTP\/1\.1 413 /);
    assert.match(announced, /\r\nconnection: close\r\n/i);
    assert.ok(
      announced.endsWith(
        '{"error":"request body too large","code":8,"message":"request body too large"}',
      ),
      announced,
    );
    // Streamed without a length: cut off once past the limit, long before 100 MiB.
    const streamed = await streamBody(f.port, 100 * 1024 * 1024);
    assert.match(streamed.reply, /^HTTP\/1\.1 413 /);
    assert.ok(
      streamed.sentBytes < 32 * 1024 * 1024,
      `the client could send ${streamed.sentBytes} bytes before the server cut it off`,
    );
    await assertServed(f);
    assert.match(await httpExchange(f.port, HEALTH), /^HTTP\/1\.1 200 /);
  } finally {
    await f.close();
  }
});

/**
 * POST a chunked body of `totalBytes` as fast as the socket takes it; stop at the server's
 * answer or close. Returns the answer and the bytes the kernel had accepted from us by then.
 */
function streamBody(
  port: number,
  totalBytes: number,
): Promise<{ reply: string; sentBytes: number }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const piece = Buffer.alloc(64 * 1024, 0x41);
    const chunk = Buffer.concat([
      Buffer.from(`${piece.length.toString(16)}\r\n`),
      piece,
      Buffer.from('\r\n'),
    ]);
    let queued = 0;
    let closed = false;
    const s = net.connect(port, '127.0.0.1', () => {
      s.write('POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
      const pump = (): void => {
        while (!closed && queued < totalBytes) {
          queued += piece.length;
          if (!s.write(chunk)) {
            s.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    let sentBytes = 0;
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      // A whole answer: stop, as an HTTP client does when the server answers early.
      if (Buffer.concat(chunks).toString('latin1').endsWith('}')) {
        sentBytes = s.bytesWritten;
        s.destroy();
      }
    });
    s.on('error', () => undefined);
    s.once('close', () => {
      closed = true;
      const reply = Buffer.concat(chunks).toString('latin1');
      resolve({ reply, sentBytes: sentBytes || s.bytesWritten });
    });
  });
}

test('the flags reach ClientApiConfig; bad values are refused', () => {
  const limits = resolveStartOptions({
    name: 'n1',
    maxConcurrentStreams: '7',
    maxWatchesPerConnection: '3',
    maxConnectionUnsentBytes: '65536',
  }).clientLimits;
  assert.deepEqual(limits, {
    connectionsPerAddressMax: DEFAULT_CLIENT_API_CONFIG.connectionsPerAddressMax,
    openingConnectionsMax: DEFAULT_CLIENT_API_CONFIG.openingConnectionsMax,
    streamsPerConnectionMax: 7,
    watchesPerConnectionMax: 3,
    keepAliveStreamsPerConnectionMax: DEFAULT_CLIENT_API_CONFIG.keepAliveStreamsPerConnectionMax,
    streamQueuedBytesMax: DEFAULT_CLIENT_API_CONFIG.streamQueuedBytesMax,
    connectionUnsentBytesMax: 65536,
    watchQueueBytesMax: DEFAULT_CLIENT_API_CONFIG.watchQueueBytesMax,
  });
  const refused = (message: string) => (e: unknown) =>
    e instanceof ConfigError && e.message === message;
  assert.throws(
    () => resolveStartOptions({ name: 'n1', maxOpeningConnections: '0' }),
    refused('--max-opening-connections must be a positive integer'),
  );
  assert.throws(
    () => resolveStartOptions({ name: 'n1', maxConcurrentStreams: String(2 ** 32) }),
    refused('--max-concurrent-streams must be at most 4294967295'),
  );
});
