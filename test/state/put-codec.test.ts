// The binary put in the Raft log (put-codec.ts): every request decodes to the one encoded,
// whatever its bytes and optional fields; malformed entries decode to null, never to a put.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { decodeCommand, encodeCommand } from '../../src/core/state/command.js';
import type { PutRequest } from '../../src/core/state/kv-types.js';
import { decodePut, encodePut, PUT_FORMAT } from '../../src/core/state/put-codec.js';
import { encodeTagged } from '../../src/core/state/tagged-json.js';

const optionalBool = fc.option(fc.boolean(), { nil: undefined });

const putRequest: fc.Arbitrary<PutRequest> = fc
  .record({
    key: fc.uint8Array({ maxLength: 40 }),
    value: fc.uint8Array({ maxLength: 300 }),
    lease: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: undefined }),
    prevKv: optionalBool,
    ignoreValue: optionalBool,
    ignoreLease: optionalBool,
  })
  .map((r) => {
    const out: Record<string, unknown> = { key: r.key, value: r.value };
    for (const k of ['lease', 'prevKv', 'ignoreValue', 'ignoreLease'] as const) {
      if (r[k] !== undefined) out[k] = r[k];
    }
    return out as unknown as PutRequest;
  });

test('a binary put decodes to the request encoded, through the command codec too', () => {
  fc.assert(
    fc.property(putRequest, (r) => {
      const data = encodePut(r);
      assert.equal(data[0], PUT_FORMAT);
      assert.deepEqual(decodePut(data), r);
      assert.deepEqual(decodeCommand(encodeCommand({ type: 'put', request: r })), {
        type: 'put',
        request: r,
      });
      // Inside a larger buffer (as after a network read), at an odd offset.
      const outer = new Uint8Array(data.length + 7);
      outer.set(data, 3);
      assert.deepEqual(decodePut(outer.subarray(3, 3 + data.length)), r);
    }),
    { numRuns: 2000 },
  );
});

test('decoded keys and values do not share the entry buffer', () => {
  const data = encodePut({ key: new Uint8Array([1, 2]), value: new Uint8Array([3, 4]) });
  const r = decodePut(data);
  assert.ok(r);
  assert.notEqual(r.key.buffer, data.buffer);
  assert.notEqual(r.value.buffer, data.buffer);
});

test('malformed binary puts are not commands; tagged-JSON commands still decode', () => {
  const good = encodePut({ key: new Uint8Array([1, 2, 3]), value: new Uint8Array([9]) });
  assert.equal(decodePut(good.subarray(0, 5)), null, 'shorter than the header');
  const longKey = good.slice();
  new DataView(longKey.buffer).setUint32(2, 1000);
  assert.equal(decodePut(longKey), null, 'key length past the end');
  const badFlags = good.slice();
  badFlags[1] = 0x03;
  assert.equal(decodePut(badFlags), null, 'a tri-state of 3');
  const highBit = good.slice();
  highBit[1] = 0x80;
  assert.equal(decodeCommand(highBit), null, 'an unknown flag');
  const del = { type: 'deleteRange', request: { key: new Uint8Array([1]) } } as const;
  assert.deepEqual(decodeCommand(encodeTagged(del)), del);
  assert.equal(encodeCommand(del)[0], '{'.charCodeAt(0));
});
