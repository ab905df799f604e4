// Forwarding frames come from peers (src/replica/member/forward-frame.ts): anything malformed is
// a FrameDecodeError, and what decodes is what the leader may act on — a deadline it can
// compare, an error code the API edge maps, a member command every member can apply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeFrame,
  encodeFrame,
  FrameDecodeError,
  type Frame,
} from '../../src/replica/member/forward-frame.js';

const keepAlive: Frame = {
  kind: 'request',
  id: 7,
  deadlineMs: 1000,
  body: { op: 'keepAlive', id: 5n },
};

test('a NaN deadline or frame ID is refused (a NaN deadline never passes)', () => {
  const b = Buffer.from(encodeFrame(keepAlive));
  b.writeDoubleLE(Number.NaN, 9); // after kind (1) and id (8)
  assert.throws(() => decodeFrame(b), FrameDecodeError);
  const c = Buffer.from(encodeFrame(keepAlive));
  c.writeDoubleLE(Number.POSITIVE_INFINITY, 1);
  assert.throws(() => decodeFrame(c), FrameDecodeError);
});

test('an answer with an unknown error code is refused', () => {
  const f: Frame = {
    kind: 'answer',
    id: 1,
    answer: { kind: 'refused', error: { code: 'Bogus' as never, message: 'x' } },
  };
  assert.throws(() => decodeFrame(encodeFrame(f)), /unknown error code/);
});

test('IDs are decimal text only; trailing bytes are refused', () => {
  const hex: Frame = { ...keepAlive, body: { op: 'memberRemove', id: 0x1fn } };
  const bytes = Buffer.from(encodeFrame(hex));
  const text = Buffer.from('0x1f');
  // Rewrite the ID text "31" as "0x1f" (which BigInt would take), length prefix included.
  const at = bytes.length - 2;
  const forged = Buffer.concat([bytes.subarray(0, at - 4), Buffer.alloc(4), text]);
  forged.writeUInt32LE(text.length, at - 4);
  assert.throws(() => decodeFrame(forged), /bad ID/);
  assert.throws(
    () => decodeFrame(Buffer.concat([Buffer.from(encodeFrame(keepAlive)), Buffer.from([0])])),
    /trailing/,
  );
});

test('forwarded member commands of the wrong shape are refused', () => {
  const bad: Frame = {
    ...keepAlive,
    body: { op: 'member', cmd: { type: 'memberSet', member: { id: 3 } } as never },
  };
  assert.throws(() => decodeFrame(encodeFrame(bad)), /malformed/);
  const add: Frame = {
    ...keepAlive,
    body: { op: 'memberAdd', peerUrls: 'http://x:1' as never, isLearner: false },
  };
  assert.throws(() => decodeFrame(encodeFrame(add)), /malformed/);
});
