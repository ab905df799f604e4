// Peer messages: the codec round-trips every message type and rejects garbage as a typed error;
// two transports on loopback exchange messages in order; a node of another cluster is refused;
// a restarted peer is reached again; one given a new address keeps its connection until it moves.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { logIndex, nodeId, term, type NodeId } from '../../src/core/base/units.js';
import type { Message } from '../../src/core/raft/types.js';
import {
  decodeMessage,
  encodeMessage,
  MessageDecodeError,
} from '../../src/server/message-codec.js';
import { hello, MESSAGES_MAGIC, PeerFrameError } from '../../src/server/peer-frames.js';
import { SNAPSHOT_CHUNK_BYTES, SnapshotReceiver } from '../../src/server/peer-snapshots.js';
import {
  PEER_FRAME_BYTES_MAX,
  PeerTransport,
  type PeerEvent,
} from '../../src/server/peer-transport.js';
import { freePorts } from '../../src/launcher/ports.js';
import { until } from '../support/poll.js';

const enc = new TextEncoder();
const n1 = nodeId(1);
const n2 = nodeId(2);
const env = { from: n1, to: n2, term: term(7) };
const entry = (i: number, text: string) => ({
  index: logIndex(i),
  term: term(7),
  type: 'normal' as const,
  data: enc.encode(text),
});

const samples: Message[] = [
  { type: 'vote', ...env, lastIndex: logIndex(9), lastTerm: term(6), transfer: true },
  { type: 'preVote', ...env, lastIndex: logIndex(0), lastTerm: term(0), transfer: false },
  { type: 'voteResp', ...env, reject: true },
  { type: 'preVoteResp', ...env, reject: false },
  {
    type: 'app',
    ...env,
    prevIndex: logIndex(3),
    prevTerm: term(6),
    commit: logIndex(3),
    entries: [entry(4, 'a'), entry(5, '')],
  },
  {
    type: 'appResp',
    ...env,
    index: logIndex(5),
    reject: true,
    hintIndex: logIndex(2),
    hintTerm: term(4),
  },
  { type: 'heartbeat', ...env, commit: logIndex(5), context: 12 },
  { type: 'heartbeatResp', ...env, context: 12 },
  { type: 'readIndex', ...env, context: 3 },
  { type: 'readIndexResp', ...env, context: 3, index: logIndex(5) },
  { type: 'timeoutNow', ...env },
  {
    type: 'snap',
    ...env,
    snapshot: {
      index: logIndex(40),
      term: term(6),
      conf: { voters: [n1, n2, nodeId(3)], learners: [nodeId(4)] },
      data: enc.encode('state'),
    },
  },
];

test('every message type survives encode → decode unchanged', () => {
  for (const m of samples) assert.deepEqual(decodeMessage(encodeMessage(m)), m, m.type);
});

test('garbage and truncated messages are typed decode errors', () => {
  assert.throws(() => decodeMessage(new Uint8Array([99, 1, 2])), MessageDecodeError);
  const good = encodeMessage(samples[4] as Message);
  assert.throws(() => decodeMessage(good.subarray(0, good.length - 1)), MessageDecodeError);
  const longer = new Uint8Array(good.length + 1);
  longer.set(good);
  assert.throws(() => decodeMessage(longer), MessageDecodeError);
});

async function pair(clusterB = 'c1') {
  const got = new Map<NodeId, Message[]>([
    [n1, []],
    [n2, []],
  ]);
  const events: PeerEvent[] = [];
  const a = await PeerTransport.start({
    clusterId: 'c1',
    self: n1,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map(),
    onMessage: (m) => got.get(n1)?.push(m),
    onEvent: (e) => events.push(e),
  });
  const b = await PeerTransport.start({
    clusterId: clusterB,
    self: n2,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map([[n1, { host: '127.0.0.1', port: a.port }]]),
    onMessage: (m) => got.get(n2)?.push(m),
    onEvent: (e) => events.push(e),
  });
  return { a, b, got, events };
}

test('messages from one peer arrive in order', async () => {
  const { a, b, got } = await pair();
  try {
    for (let i = 1; i <= 300; i++)
      b.send({
        type: 'heartbeat',
        from: n2,
        to: n1,
        term: term(1),
        commit: logIndex(0),
        context: i,
      });
    await until('300 messages', () => (got.get(n1)?.length ?? 0) >= 300);
    assert.deepEqual(
      got.get(n1)?.map((m) => (m.type === 'heartbeat' ? m.context : -1)),
      Array.from({ length: 300 }, (_, i) => i + 1),
    );
  } finally {
    await a.close();
    await b.close();
  }
});

test('a node of another cluster is refused', async () => {
  const { a, b, got, events } = await pair('other-cluster');
  try {
    b.send({ type: 'heartbeat', from: n2, to: n1, term: term(1), commit: logIndex(0), context: 1 });
    await until('a refusal', () => events.some((e) => e.type === 'refused'));
    const refusal = events.find((e) => e.type === 'refused');
    assert.match(
      refusal?.type === 'refused' ? refusal.reason : '',
      /cluster 'other-cluster', not 'c1'/,
    );
    assert.equal(got.get(n1)?.length, 0);
    // A port that answers and hangs up is alive: no evidence that the peer is gone.
    assert.ok(!events.some((e) => e.type === 'unreachable'));
  } finally {
    await a.close();
    await b.close();
  }
});

test('a peer that restarts on the same port is reached again', async () => {
  const { a, b } = await pair();
  const port = a.port;
  await a.close();
  const got: Message[] = [];
  const a2 = await PeerTransport.start({
    clusterId: 'c1',
    self: n1,
    listen: { host: '127.0.0.1', port },
    nowMs: () => performance.now(),
    peers: new Map(),
    onMessage: (m) => got.push(m),
  });
  try {
    // Raft keeps sending heartbeats; so does this loop until one lands after the reconnect.
    let ctx = 0;
    await until('a message after restart', () => {
      b.send({
        type: 'heartbeat',
        from: n2,
        to: n1,
        term: term(1),
        commit: logIndex(0),
        context: ++ctx,
      });
      return got.length > 0;
    });
  } finally {
    await a2.close();
    await b.close();
  }
});

test('a port that refuses the redial after a lost connection: unreachable', async () => {
  const events: PeerEvent[] = [];
  let roundTrips = 0;
  const a = await PeerTransport.start({
    clusterId: 'c1',
    self: n1,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map(),
    onMessage: () => undefined,
  });
  const b = await PeerTransport.start({
    clusterId: 'c1',
    self: n2,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map([[n1, { host: '127.0.0.1', port: a.port }]]),
    onMessage: () => undefined,
    onEvent: (e) => events.push(e),
    onRoundTrip: () => roundTrips++,
  });
  try {
    // A working link: the peer acknowledged what it read.
    let ctx = 0;
    await until('an acknowledgement', () => {
      b.send({
        type: 'heartbeat',
        from: n2,
        to: n1,
        term: term(1),
        commit: logIndex(0),
        context: ++ctx,
      });
      return roundTrips > 0;
    });
    assert.ok(!events.some((e) => e.type === 'unreachable'), 'no evidence while the peer is up');
    // The peer's process goes away (its listener with it). Nothing is queued for it, yet the
    // lost connection is followed by a dial, and the refused dial is the evidence.
    await a.close();
    await until('unreachable', () => events.some((e) => e.type === 'unreachable'));
    const e = events.find((x) => x.type === 'unreachable');
    assert.deepEqual(e, { type: 'unreachable', peer: n1 });
    const lost = events.findIndex((x) => x.type === 'disconnected');
    assert.ok(lost >= 0 && lost < events.indexOf(e), 'the loss came first');
  } finally {
    await b.close();
  }
});

const heartbeat = (context: number): Message => ({
  type: 'heartbeat',
  from: n2,
  to: n1,
  term: term(1),
  commit: logIndex(0),
  context,
});

test('a peer given a new address is reached at the old one until it moves there', async () => {
  const { a, b, got } = await pair();
  const [port] = await freePorts(1);
  assert.ok(port !== undefined);
  let a2: PeerTransport | undefined;
  let aClosed = false;
  try {
    b.send(heartbeat(1));
    await until('a message at the old address', () => (got.get(n1)?.length ?? 0) >= 1);
    // MemberUpdate applied: n1 is to be found at `port`, where nothing listens yet. It still
    // runs at the old address until it is restarted, and must go on hearing from us there.
    b.addPeer(n1, { host: '127.0.0.1', port });
    b.send(heartbeat(2));
    await until('a message after the move, at the old address', () =>
      (got.get(n1) ?? []).some((m) => m.type === 'heartbeat' && m.context === 2),
    );
    // Restarted at the new address: the next dial goes there.
    await a.close();
    aClosed = true;
    const moved: Message[] = [];
    a2 = await PeerTransport.start({
      clusterId: 'c1',
      self: n1,
      listen: { host: '127.0.0.1', port },
      nowMs: () => performance.now(),
      peers: new Map(),
      onMessage: (m) => moved.push(m),
    });
    let ctx = 2;
    await until('a message at the new address', () => {
      b.send(heartbeat(++ctx));
      return moved.length > 0;
    });
  } finally {
    if (!aClosed) await a.close();
    await a2?.close();
    await b.close();
  }
});

test('every batch carries the sender clock; the receiver keeps the newest reading', async () => {
  const { a, b, got } = await pair();
  try {
    b.send(heartbeat(1));
    await until('a message', () => (got.get(n1)?.length ?? 0) >= 1);
    const h = a.heard(n2);
    assert.ok(h !== undefined, 'no clock reading from the sender');
    assert.ok(h.peerMs <= performance.now() && h.localMs >= h.peerMs);
    assert.equal(a.channel.heard(n2), h);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a connection whose batches the peer never acknowledges is reset after the bound', async () => {
  // A peer that accepts and reads nothing: no acknowledgement ever comes back.
  const { createServer } = await import('node:net');
  const sockets: import('node:net').Socket[] = [];
  const silent = createServer((s) => {
    s.pause();
    s.on('error', () => {}); // our reset arrives here as ECONNRESET
    sockets.push(s);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const addr = silent.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const events: PeerEvent[] = [];
  const b = await PeerTransport.start({
    clusterId: 'c1',
    self: n2,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    waitMaxMs: 200,
    peers: new Map([[n1, { host: '127.0.0.1', port }]]),
    onMessage: () => {},
    onEvent: (e) => events.push(e),
  });
  try {
    b.send(heartbeat(1));
    await until('the stalled connection reset', () => events.some((e) => e.type === 'stalled'));
    const reset = events.find((e) => e.type === 'stalled');
    assert.equal(reset?.type === 'stalled' ? reset.messages : 0, 1);
  } finally {
    await b.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  }
});

test('messages queued past the bound are dropped, not delivered when the peer comes back', async () => {
  const [port] = await freePorts(1);
  const events: PeerEvent[] = [];
  const b = await PeerTransport.start({
    clusterId: 'c1',
    self: n2,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    waitMaxMs: 200,
    peers: new Map([[n1, { host: '127.0.0.1', port: port as number }]]),
    onMessage: () => {},
    onEvent: (e) => events.push(e),
  });
  const got: Message[] = [];
  let a: PeerTransport | undefined;
  try {
    // Nobody listens yet: the message waits in the queue until the bound drops it.
    b.send(heartbeat(1));
    await until('the stale message dropped', () => events.some((e) => e.type === 'dropped'));
    a = await PeerTransport.start({
      clusterId: 'c1',
      self: n1,
      listen: { host: '127.0.0.1', port: port as number },
      nowMs: () => performance.now(),
      peers: new Map(),
      onMessage: (m) => got.push(m),
    });
    let ctx = 1;
    await until('a fresh message', () => {
      b.send(heartbeat(++ctx));
      return got.length > 0;
    });
    assert.ok(
      got.every((m) => m.type === 'heartbeat' && m.context > 1),
      'the stale message was delivered',
    );
  } finally {
    await a?.close();
    await b.close();
  }
});

test("a restarted peer's clock readings replace its earlier process's", async () => {
  const { a, b, got } = await pair();
  b.send(heartbeat(1));
  await until('a message', () => (got.get(n1)?.length ?? 0) >= 1);
  const before = a.heard(n2);
  assert.ok(before !== undefined);
  await b.close();
  // The new process's clock reads far less than the old one's did.
  const b2 = await PeerTransport.start({
    clusterId: 'c1',
    self: n2,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now() - 1_000_000,
    peers: new Map([[n1, { host: '127.0.0.1', port: a.port }]]),
    onMessage: () => {},
  });
  try {
    const seen = got.get(n1)?.length ?? 0;
    let ctx = 1;
    await until('a message from the new process', () => {
      b2.send(heartbeat(++ctx));
      return (got.get(n1)?.length ?? 0) > seen;
    });
    const after = a.heard(n2);
    assert.ok(after !== undefined && after.peerMs < before.peerMs, 'kept the old reading');
  } finally {
    await a.close();
    await b2.close();
  }
});

test('a snapshot past the frame limit arrives whole on its own connection', async () => {
  const { a, b, got, events } = await pair();
  try {
    // 80 MiB: more than one frame may carry (PEER_FRAME_BYTES_MAX is 64 MiB).
    const data = new Uint8Array(80 * 1024 * 1024);
    for (let i = 0; i < data.length; i += 4093) data[i] = i & 0xff;
    const snap: Message = {
      type: 'snap',
      from: n2,
      to: n1,
      term: term(3),
      snapshot: {
        index: logIndex(900),
        term: term(3),
        conf: { voters: [n1, n2], learners: [] },
        data,
      },
    };
    b.send(snap);
    // Heartbeats keep flowing beside it, on the message connection.
    b.send(heartbeat(1));
    await until('the snapshot', () => got.get(n1)?.some((m) => m.type === 'snap') ?? false, 60_000);
    const m = got.get(n1)?.find((x) => x.type === 'snap');
    assert.ok(m?.type === 'snap');
    assert.equal(m.snapshot.index, 900);
    assert.equal(m.snapshot.data.length, data.length);
    assert.ok(Buffer.from(m.snapshot.data).equals(Buffer.from(data)), 'the bytes are the same');
    assert.ok(got.get(n1)?.some((x) => x.type === 'heartbeat'));
    await until('the sender to report it', () => events.some((e) => e.type === 'snapshotSent'));
    assert.ok(events.some((e) => e.type === 'snapshotReceived'));
  } finally {
    await a.close();
    await b.close();
  }
});

// ---- hostile input on the peer port (found by test/fuzz/peer-codecs.test.ts)

test('a message with a NaN term, a fractional index or a gap in its append is refused', () => {
  const hb = Buffer.from(encodeMessage(samples[6] as Message));
  hb.writeDoubleLE(Number.NaN, 17); // the term, after type (1), from (8) and to (8)
  assert.throws(() => decodeMessage(hb), MessageDecodeError);
  const from = Buffer.from(encodeMessage(samples[6] as Message));
  from.writeDoubleLE(-1.5, 1);
  assert.throws(() => decodeMessage(from), MessageDecodeError);
  const gap: Message = {
    type: 'app',
    ...env,
    prevIndex: logIndex(3),
    prevTerm: term(6),
    commit: logIndex(3),
    entries: [entry(4, 'a'), entry(6, 'b')],
  };
  assert.throws(() => decodeMessage(encodeMessage(gap)), /index 6 after 3/);
  const vote = Buffer.from(encodeMessage(samples[0] as Message));
  vote[vote.length - 1] = 2; // the transfer flag: 0 or 1 only
  assert.throws(() => decodeMessage(vote), MessageDecodeError);
});

test('an append claiming 2^32-1 entries is refused from its count', () => {
  const app = Buffer.from(
    encodeMessage({ ...(samples[4] as Message & { type: 'app' }), entries: [] }),
  );
  app.writeUInt32LE(0xffffffff, app.length - 4);
  assert.throws(() => decodeMessage(app), /cannot fit/);
});

/** A raw connection to `port` that sends `bytes`; resolves once the transport closes it. */
function rawPeer(port: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    s.on('error', () => undefined);
    s.on('close', () => resolve());
  });
}

test('a first frame longer than a hello is refused from its length prefix', async () => {
  const events: PeerEvent[] = [];
  const t = await PeerTransport.start({
    clusterId: 'c1',
    self: n1,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map(),
    onMessage: () => undefined,
    onEvent: (e) => events.push(e),
  });
  try {
    // A 64 MiB frame would have been awaited and buffered before anything was checked.
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(PEER_FRAME_BYTES_MAX, 0);
    await rawPeer(t.port, prefix);
    assert.ok(
      events.some((e) => e.type === 'refused' && /exceeds the limit/.test(e.reason)),
      JSON.stringify(events),
    );
    // A hello whose sender is NaN is not a hello.
    const h = hello(MESSAGES_MAGIC, 'c1', n2, { host: '127.0.0.1', port: 1 });
    h.writeDoubleLE(Number.NaN, 8);
    await rawPeer(t.port, h);
    assert.ok(events.some((e) => e.type === 'refused' && e.reason === 'not a tenure peer'));
  } finally {
    await t.close();
  }
});

test('a connection that sends no hello is dropped after the hello timeout', async () => {
  const events: PeerEvent[] = [];
  const t = await PeerTransport.start({
    clusterId: 'c1',
    self: n1,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers: new Map(),
    helloTimeoutMs: 200,
    onMessage: () => undefined,
    onEvent: (e) => events.push(e),
  });
  try {
    await rawPeer(t.port, Buffer.from([1, 0]));
    assert.ok(events.some((e) => e.type === 'refused' && /no hello within 200 ms/.test(e.reason)));
  } finally {
    await t.close();
  }
});

test('a snapshot BEGIN announcing 2 GiB holds only the bytes that came', () => {
  const r = new SnapshotReceiver();
  const begin = Buffer.alloc(9);
  begin[0] = 0xf1;
  begin.writeDoubleLE(2 ** 31, 1);
  r.frame(begin);
  assert.equal(r.bufferedBytes, 0, 'nothing allocated for an announcement');
  r.frame(Buffer.from([0xf2, 1, 2, 3]));
  assert.ok(r.bufferedBytes <= SNAPSHOT_CHUNK_BYTES, `${r.bufferedBytes} bytes held`);
  assert.throws(() => r.frame(begin), PeerFrameError);
});
