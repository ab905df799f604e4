// Fuzzing the decoders of the peer port (src/server/peer-frames.ts, message-codec.ts,
// peer-snapshots.ts, src/replica/member/forward-frame.ts): valid encodings mutated byte by byte,
// and arbitrary bytes. Every input decodes or is refused with the decoder's own typed error,
// what decodes is well-formed (the core never sees a NaN term or a gap in an append), and no
// length field makes a decoder allocate more than the bytes it was given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { logIndex } from '../../src/core/base/units.js';
import type { Message } from '../../src/core/raft/types.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import {
  decodeMessage,
  encodeMessage,
  MessageDecodeError,
} from '../../src/server/message-codec.js';
import {
  FrameReader,
  hello,
  MESSAGES_MAGIC,
  PEER_HELLO_BYTES_MAX,
  PeerFrameError,
  readHello,
  SNAPSHOT_MAGIC,
} from '../../src/server/peer-frames.js';
import { SnapshotReceiver, SNAPSHOT_CHUNK_BYTES } from '../../src/server/peer-snapshots.js';
import { encodeCommand } from '../../src/core/state/command.js';
import {
  decodeFrame,
  encodeFrame,
  FrameDecodeError,
} from '../../src/replica/member/forward-frame.js';
import { encodeMemberEntry, ServerMachine } from '../../src/replica/member/server-machine.js';
import { forwardFrameArb, memberIdArb, messageArb } from './arbitraries.js';
import { decodesOrRefuses, fuzzParams, hostile } from './mutate.js';

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;
const isId = (n: number): boolean => Number.isSafeInteger(n) && n > 0;

/** What the Raft core may assume of a message that decoded. */
function assertWellFormed(m: Message): void {
  assert.ok(isId(m.from) && isId(m.to), `ids ${m.from} ${m.to}`);
  assert.ok(isCount(m.term), `term ${m.term}`);
  const counts: number[] = [];
  switch (m.type) {
    case 'vote':
    case 'preVote':
      counts.push(m.lastIndex, m.lastTerm);
      break;
    case 'app':
      counts.push(m.prevIndex, m.prevTerm, m.commit);
      m.entries.forEach((e, i) => {
        assert.equal(e.index, m.prevIndex + 1 + i, 'entries continue prevIndex');
        assert.ok(isCount(e.term) && e.term <= m.term, `entry term ${e.term}`);
        assert.ok(e.type === 'normal' || e.type === 'conf');
      });
      break;
    case 'appResp':
      counts.push(m.index, m.hintIndex, m.hintTerm);
      break;
    case 'heartbeat':
      counts.push(m.commit);
      assert.ok(Number.isFinite(m.context));
      break;
    case 'heartbeatResp':
    case 'readIndex':
      assert.ok(Number.isFinite(m.context));
      break;
    case 'readIndexResp':
      counts.push(m.index);
      assert.ok(Number.isFinite(m.context));
      break;
    case 'snap':
      counts.push(m.snapshot.index, m.snapshot.term);
      for (const id of [...m.snapshot.conf.voters, ...m.snapshot.conf.learners])
        assert.ok(isId(id), `conf id ${id}`);
      break;
    default:
      break;
  }
  for (const n of counts) assert.ok(isCount(n), `field ${n} of ${m.type}`);
}

const encodedMessage = messageArb.map(encodeMessage);

test('Raft messages: mutated and arbitrary bytes decode well-formed or MessageDecodeError', () => {
  fc.assert(
    fc.property(hostile(encodedMessage), (bytes) => {
      const m = decodesOrRefuses(() => decodeMessage(bytes), [MessageDecodeError], bytes);
      if (m === undefined) return;
      assertWellFormed(m);
      // What decoded is a message its encoder writes the same way again.
      assert.deepEqual(decodeMessage(encodeMessage(m)), m);
      assert.equal(encodeMessage(m).length, bytes.length);
    }),
    fuzzParams(),
  );
});

test('Raft messages: every valid message round-trips', () => {
  fc.assert(
    fc.property(messageArb, (m) => {
      assert.deepEqual(decodeMessage(encodeMessage(m)), m);
    }),
    fuzzParams(500),
  );
});

test('Raft messages: a huge count is refused before anything is allocated for it', () => {
  // An append claiming 2^32-1 entries, a snapshot conf claiming 2^32-1 voters: the decoder
  // checks the count against the bytes left before building anything.
  const app = Buffer.from(
    encodeMessage({
      type: 'app',
      from: 1 as never,
      to: 2 as never,
      term: 1 as never,
      prevIndex: logIndex(0),
      prevTerm: 0 as never,
      commit: logIndex(0),
      entries: [],
    }),
  );
  app.writeUInt32LE(0xffffffff, app.length - 4);
  assert.throws(() => decodeMessage(app), MessageDecodeError);
});

// ---- the hello and the frame reader

const helloArb = fc
  .record({
    magic: fc.constantFrom(MESSAGES_MAGIC, SNAPSHOT_MAGIC),
    cluster: fc.stringMatching(/^[0-9a-f]{0,16}$/),
    self: memberIdArb,
    host: fc.constantFrom('127.0.0.1', 'node-b', '::1'),
    port: fc.integer({ min: 1, max: 65535 }),
  })
  .map(
    ({ magic, cluster, self, host, port }) =>
      new Uint8Array(hello(magic, cluster, self, { host, port })),
  );

test('hello: mutated and arbitrary first frames are a valid hello or refused', () => {
  fc.assert(
    fc.property(hostile(helloArb), (bytes) => {
      const reader = new FrameReader(PEER_HELLO_BYTES_MAX);
      const frames: Buffer[] = [];
      const pushed = decodesOrRefuses(
        () => reader.push(Buffer.from(bytes), (p) => frames.push(p)),
        [PeerFrameError],
        bytes,
      );
      if (pushed === undefined && frames.length === 0) return;
      for (const f of frames) {
        const h = decodesOrRefuses(() => readHello(f), [PeerFrameError], f);
        if (h === undefined) continue;
        assert.ok(h.magic === MESSAGES_MAGIC || h.magic === SNAPSHOT_MAGIC);
        assert.ok(isId(h.sender), `sender ${h.sender}`);
        if (h.reachAt !== undefined) {
          assert.ok(h.reachAt.host.length > 0);
          assert.ok(h.reachAt.port > 0 && h.reachAt.port < 65536);
        }
      }
    }),
    fuzzParams(),
  );
});

test('frame reader: a length over its bound is refused from the 4 bytes of the prefix', () => {
  const reader = new FrameReader(PEER_HELLO_BYTES_MAX);
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(PEER_HELLO_BYTES_MAX + 1, 0);
  assert.throws(() => reader.push(prefix, () => undefined), PeerFrameError);
});

test('frame reader: a stream cut anywhere yields the same frames in the same order', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (payloads, cuts) => {
        const stream = Buffer.concat(
          payloads.map((p) => {
            const head = Buffer.alloc(4);
            head.writeUInt32LE(p.length, 0);
            return Buffer.concat([head, p]);
          }),
        );
        const at = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const reader = new FrameReader(1024);
        const got: Buffer[] = [];
        let from = 0;
        for (const c of [...at, stream.length]) {
          reader.push(stream.subarray(from, c), (p) => got.push(Buffer.from(p)));
          from = c;
        }
        assert.deepEqual(
          got,
          payloads.map((p) => Buffer.from(p)),
        );
      },
    ),
    fuzzParams(500),
  );
});

// ---- snapshot connections

const BEGIN = 0xf1;
const CHUNK = 0xf2;

test('snapshot receiver: a BEGIN announcing a huge snapshot allocates only what arrives', () => {
  fc.assert(
    fc.property(
      fc.oneof(fc.constant(2 ** 32), fc.integer({ min: 1, max: 2 ** 40 }), fc.double()),
      fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 4 }),
      (total, chunks) => {
        const r = new SnapshotReceiver();
        const begin = Buffer.alloc(9);
        begin[0] = BEGIN;
        begin.writeDoubleLE(total, 1);
        let received = 0;
        try {
          r.frame(begin);
          for (const c of chunks) {
            received += c.length;
            r.frame(Buffer.concat([Buffer.from([CHUNK]), c]));
          }
        } catch (e) {
          assert.ok(e instanceof PeerFrameError, String(e));
        }
        assert.ok(
          r.bufferedBytes <= Math.max(2 * received, SNAPSHOT_CHUNK_BYTES),
          `${r.bufferedBytes} bytes held for ${received} received (announced ${total})`,
        );
      },
    ),
    fuzzParams(500),
  );
});

test('snapshot receiver: mutated frame sequences end in the snapshot or PeerFrameError', () => {
  const valid = fc.uint8Array({ minLength: 1, maxLength: 200 }).map((data) => {
    const begin = Buffer.alloc(9);
    begin[0] = BEGIN;
    begin.writeDoubleLE(data.length, 1);
    const frames = [begin];
    for (let at = 0; at < data.length; at += 64)
      frames.push(Buffer.concat([Buffer.from([CHUNK]), data.subarray(at, at + 64)]));
    return frames.map((f) => new Uint8Array(f));
  });
  fc.assert(
    fc.property(
      valid.chain((frames) =>
        fc.tuple(...frames.map((f) => hostile(fc.constant(f), 16))).map((fs) => fs),
      ),
      (frames) => {
        const r = new SnapshotReceiver();
        for (const f of frames) {
          const whole = decodesOrRefuses(() => r.frame(Buffer.from(f)), [PeerFrameError], f);
          if (whole === undefined) continue;
          assert.ok(whole.length > 0);
        }
      },
    ),
    fuzzParams(500),
  );
});

// ---- forwarding frames

const encodedFrame = forwardFrameArb.map(encodeFrame);

test('forward frames: mutated and arbitrary bytes decode or FrameDecodeError', () => {
  fc.assert(
    fc.property(hostile(encodedFrame), (bytes) => {
      const f = decodesOrRefuses(() => decodeFrame(bytes), [FrameDecodeError], bytes);
      if (f === undefined) return;
      assert.ok(Number.isFinite(f.id), `id ${f.id}`);
      if (f.kind === 'answer') return;
      assert.ok(!Number.isNaN(f.deadlineMs), 'deadline');
      const body = f.body;
      switch (body.op) {
        case 'propose': {
          // A forwarded command the leader proposes is applied by every member: whatever
          // decodes must apply without an exception (or the whole cluster stops on it).
          const machine = new EtcdMachine();
          machine.apply(logIndex(1), encodeCommand(body.cmd));
          break;
        }
        case 'member': {
          const machine = new ServerMachine();
          machine.apply(logIndex(1), encodeMemberEntry(body.cmd, 1));
          for (const m of machine.memberTable().values()) {
            assert.equal(typeof m.id, 'string');
            assert.ok(m.peerUrls.every((u) => typeof u === 'string'));
            assert.ok(m.clientUrls.every((u) => typeof u === 'string'));
          }
          break;
        }
        case 'memberAdd':
          assert.ok(body.peerUrls.every((u) => typeof u === 'string'));
          assert.equal(typeof body.isLearner, 'boolean');
          break;
        case 'timeToLive':
          assert.equal(typeof body.keys, 'boolean');
          assert.equal(typeof body.id, 'bigint');
          break;
        case 'memberUpdate':
          assert.equal(typeof body.id, 'bigint');
          assert.ok(body.peerUrls.every((u) => typeof u === 'string'));
          break;
        case 'keepAlive':
        case 'memberRemove':
        case 'memberPromote':
          assert.equal(typeof body.id, 'bigint');
          break;
      }
    }),
    fuzzParams(),
  );
});

test('forward frames: every valid frame round-trips', () => {
  fc.assert(
    fc.property(forwardFrameArb, (f) => {
      assert.deepEqual(decodeFrame(encodeFrame(f)), f);
    }),
    fuzzParams(500),
  );
});
