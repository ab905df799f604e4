// The membership runtime in one process, on loopback: codec and config validation, the event
// queue, and a 3-member cluster that joins, sees a graceful leave and a closed member.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodePacket,
  encodePacket,
  frame,
  FrameReader,
  parseAddress,
} from '../../src/membership/codec.js';
import { AsyncQueue } from '../../src/core/base/async-queue.js';
import {
  Membership,
  MembershipError,
  resolveConfig,
  type MembershipEvent,
} from '../../src/membership/index.js';
import type { Packet } from '../../src/core/detect/index.js';
import { until } from '../support/poll.js';

const ping: Packet = {
  type: 'ping',
  seq: 7,
  target: 'b',
  from: { name: 'a', addr: '127.0.0.1:1', epoch: 3, inc: 1 },
  updates: [
    { type: 'dead', name: 'c', epoch: 1, inc: 0, from: 'a', silentForMs: 12, reason: 'timeout' },
  ],
};

describe('codec', () => {
  it('round-trips a packet, over UDP and in TCP frames', () => {
    assert.deepEqual(decodePacket(encodePacket(ping)), ping);
    const r = new FrameReader();
    const bytes = Buffer.concat([frame(ping), frame(ping)]);
    assert.deepEqual(r.push(bytes.subarray(0, 10)), []);
    assert.deepEqual(r.push(bytes.subarray(10)), [ping, ping]);
  });
  it('rejects malformed packets with BAD_PACKET', () => {
    const bad = [
      'not json',
      '{"type":"nope"}',
      JSON.stringify({ ...ping, seq: 'x' }),
      JSON.stringify({ ...ping, updates: [{ type: 'alive' }] }),
    ];
    for (const b of bad) {
      assert.throws(
        () => decodePacket(Buffer.from(b)),
        (e: unknown) => e instanceof MembershipError && e.code === 'BAD_PACKET',
        b,
      );
    }
  });
  it('parses host:port', () => {
    assert.deepEqual(parseAddress('127.0.0.1:7946'), { host: '127.0.0.1', port: 7946 });
    assert.throws(() => parseAddress('127.0.0.1'));
  });
});

describe('config', () => {
  it('fills from a preset and names the bad field', () => {
    assert.equal(resolveConfig({ name: 'a', preset: 'local' }).swim.pauseToleranceMs, 3000);
    assert.equal(resolveConfig({ name: 'a' }).host, '127.0.0.1');
    const bad: [object, string][] = [
      [{ name: 'a b' }, 'name'],
      [{ name: 'a', port: 70_000 }, 'port'],
      [{ name: 'a', levelIntervalMs: 1 }, 'levelIntervalMs'],
      [
        { name: 'a', swim: { ...resolveConfig({ name: 'a' }).swim, probeIntervalMs: -1 } },
        'probeIntervalMs',
      ],
    ];
    for (const [o, field] of bad) {
      assert.throws(
        () => resolveConfig(o as { name: string }),
        (e: unknown) =>
          e instanceof MembershipError && e.code === 'BAD_CONFIG' && e.message.includes(field),
        field,
      );
    }
  });
});

describe('AsyncQueue', () => {
  it('delivers in order, waits, drops the oldest when full, and ends on close', async () => {
    const q = new AsyncQueue<number>({ max: 2 });
    q.push(1);
    q.push(2);
    q.push(3);
    assert.equal(q.dropped, 1);
    assert.deepEqual(await q.next(), { value: 2, done: false });
    assert.deepEqual(await q.next(), { value: 3, done: false });
    const waiting = q.next();
    q.push(4);
    assert.deepEqual(await waiting, { value: 4, done: false });
    q.end();
    assert.deepEqual(await q.next(), { value: undefined, done: true });
  });
});

describe('Membership on loopback (in process)', { timeout: 60_000 }, () => {
  it('joins, reports events as an iterator and an emitter, sees a leave and a closed member', async () => {
    const a = await Membership.start({ name: 'a', preset: 'local' });
    const b = await Membership.start({ name: 'b', preset: 'local', seeds: [a.address] });
    const c = await Membership.start({ name: 'c', preset: 'local', seeds: [a.address] });
    const all = [a, b, c];
    try {
      const seen: MembershipEvent[] = [];
      const ac = new AbortController();
      const reading = (async () => {
        for await (const e of a.events({ signal: ac.signal })) seen.push(e);
      })();
      const emitted: string[] = [];
      a.on('left', (e) => emitted.push(`left ${e.member.name}`));
      a.on('dead', (e) => emitted.push(`dead ${e.member.name}`));

      const status = (m: Membership, name: string) => m.member(name)?.status;
      await until('full view', () =>
        all.every((m) => all.every((x) => x === m || status(m, x.name) === 'alive')),
      );
      assert.equal(a.level('b') < 8, true);

      await b.leave();
      await until('a sees b left', () => status(a, 'b') === 'left');
      await c.close();
      await until('a sees c dead', () => status(a, 'c') === 'dead');
      assert.ok(emitted.includes('left b') && emitted.includes('dead c'), emitted.join(', '));
      assert.equal(a.level('c'), Infinity);

      ac.abort();
      await reading;
      assert.ok(seen.some((e) => e.type === 'left' && e.member.name === 'b'));
      assert.ok(
        seen.some(
          (e) => e.type === 'level' && e.name === 'c' && e.action === 'remove' && e.engaged,
        ),
      );
    } finally {
      await Promise.all(all.map((m) => m.close()));
    }
    await a.closed();
  });
});
