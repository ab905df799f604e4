// The pure parts of the lock and election recipes (src/client/recipe-keys.ts), table and property
// tests; and the live holder signal (recipe-signal.ts) on a clock whose timers never run, which
// is what a paused process looks like on resume.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  decodeLastLeader,
  encodeLastLeader,
  handOffHintKey as hintKey,
  lastLeaderKey,
  queuePrefix as prefixOf,
  releaseMarkerKey as markerKey,
} from '../../src/client/recipe-keys.js';
import {
  Session,
  type CallOptions,
  type Clock,
  type KeyValue,
  type SessionTransport,
} from '../../src/client/index.js';
import {
  contenderKey,
  decodeHandOffHint,
  encodeHandOffHint,
  handOffHintKey,
  leaderChanged,
  leaderOf,
  leaseOfContenderKey,
  lockDelayMsFor,
  mustYield,
  queuePrefix,
  releaseMarkerKey,
  tokenAdmits,
} from '../../src/client/recipe-keys.js';
import { linkAbort, liveSignal } from '../../src/client/recipe-signal.js';

const kv = (key: string, createRevision: bigint, value = '', modRevision = createRevision) =>
  ({
    key: Buffer.from(key),
    value: Buffer.from(value),
    createRevision,
    modRevision,
    version: 1n,
    lease: 1n,
  }) satisfies KeyValue;

test('contender keys use etcd Go layout: name/ + lowercase hex lease id, no padding', () => {
  // etcd's concurrency package: fmt.Sprintf("%s%x", pfx, lease) with pfx = name + "/".
  assert.equal(contenderKey('my-lock', 0x694d7ed32c4c2a05n), 'my-lock/694d7ed32c4c2a05');
  assert.equal(contenderKey('a', 0xabn), 'a/ab');
  assert.equal(contenderKey('a', 1n), 'a/1');
  assert.equal(queuePrefix('x/y'), 'x/y/');
  assert.throws(() => contenderKey('a', 0n), RangeError);
  assert.throws(() => queuePrefix(''), RangeError);
});

test('our bookkeeping keys lie outside the queue prefix', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), (name) => {
      assert.ok(!releaseMarkerKey(name).startsWith(queuePrefix(name)));
      assert.ok(!handOffHintKey(name).startsWith(queuePrefix(name)));
    }),
  );
});

test('lease ids round-trip through contender keys', () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 1n, max: (1n << 63n) - 1n }),
      fc.string({ minLength: 1 }),
      (id, name) => {
        assert.equal(leaseOfContenderKey(name, contenderKey(name, id)), id);
      },
    ),
  );
  assert.equal(leaseOfContenderKey('a', 'a/XYZ'), undefined);
  assert.equal(leaseOfContenderKey('a', 'b/1'), undefined);
});

test('tokens: a resource admits a token only if it is at least its high-water mark', () => {
  fc.assert(
    fc.property(fc.array(fc.bigInt({ min: 1n, max: 1000n })), (tokens) => {
      // Applying tokens in any order, the accepted ones form a non-decreasing sequence.
      let mark: bigint | undefined;
      const accepted: bigint[] = [];
      for (const t of tokens) {
        if (tokenAdmits(mark, t)) {
          accepted.push(t);
          mark = t;
        }
      }
      for (let i = 1; i < accepted.length; i++) {
        assert.ok((accepted[i] as bigint) >= (accepted[i - 1] as bigint));
      }
    }),
  );
});

test('lock-delay: only a marker holding exactly the deleted token proves a clean release', () => {
  const gone = { token: 42n, deleteRevision: 50n };
  const rows: Array<[string, number, typeof gone | undefined, KeyValue | undefined, number]> = [
    ['delay off', 0, gone, undefined, 0],
    ['nothing deleted (was head at once)', 1000, undefined, undefined, 0],
    ['no marker: crash, expiry, etcdctl', 1000, gone, undefined, 1000],
    ['marker of this holder: clean', 1000, gone, kv('l.released', 10n, '42'), 0],
    ['marker of another holder', 1000, gone, kv('l.released', 10n, '41'), 1000],
    ['garbage marker', 1000, gone, kv('l.released', 10n, 'x'), 1000],
  ];
  for (const [what, delay, g, marker, want] of rows) {
    assert.equal(lockDelayMsFor(delay, g, marker), want, what);
  }
});

test('hand-off: yield once, only to another live candidate', () => {
  const hint = { hint: { to: 'c', fromToken: '5' }, modRevision: 9n };
  const live = [kv('e/1', 6n, 'b'), kv('e/2', 7n, 'c')];
  assert.equal(mustYield('b', hint, live, new Set()), true);
  assert.equal(mustYield('c', hint, live, new Set()), false, 'the successor never yields');
  assert.equal(mustYield('b', hint, live, new Set([9n])), false, 'once per hint');
  assert.equal(mustYield('b', hint, [kv('e/1', 6n, 'b')], new Set()), false, 'not a candidate');
  assert.equal(mustYield('b', undefined, live, new Set()), false);
  const enc = encodeHandOffHint({ to: 'c', fromToken: '5' });
  assert.deepEqual(decodeHandOffHint(Buffer.from(enc)), { to: 'c', fromToken: '5' });
  assert.equal(decodeHandOffHint(Buffer.from('{')), undefined);
  assert.equal(decodeHandOffHint(Buffer.from('{"to":1}')), undefined);
});

test('observed leader: first-created; changes by token (same value too), proclamation, null', () => {
  assert.equal(leaderOf([]), null);
  assert.equal(leaderOf([kv('e/2', 7n), kv('e/1', 5n), kv('e/3', 9n)])?.createRevision, 5n);
  const a = { token: 5n, modRevision: 5n };
  assert.equal(leaderChanged(undefined, null), true, 'the first state is always reported');
  assert.equal(leaderChanged(null, null), false);
  assert.equal(leaderChanged(null, a), true);
  assert.equal(leaderChanged(a, null), true);
  assert.equal(leaderChanged(a, { ...a }), false);
  assert.equal(leaderChanged(a, { token: 5n, modRevision: 8n }), true, 'proclaim');
  assert.equal(leaderChanged(a, { token: 6n, modRevision: 6n }), true, 'new term');
});

/** A clock that a test moves by hand and whose timers never fire: a paused process, resumed. */
class FrozenTimersClock implements Clock {
  now = 0;
  nowMs(): number {
    return this.now;
  }
  after(): () => void {
    return () => undefined;
  }
  every(): () => void {
    return () => undefined;
  }
}

class AnsweringTransport implements SessionTransport {
  grant(ttlSeconds: number, _o: CallOptions) {
    return Promise.resolve({ id: 7n, ttlSeconds });
  }
  keepAliveOnce(_id: bigint, _o: CallOptions) {
    return Promise.resolve({ ttlSeconds: 2 });
  }
  revoke() {
    return Promise.resolve();
  }
}

test('a holder signal reports the loss at the moment it is read, before any timer runs', async () => {
  const clock = new FrozenTimersClock();
  const session = await Session.create(new AnsweringTransport(), { ttlSeconds: 2, clock }, 1000);
  const c = new AbortController();
  linkAbort(session.activeSignal(), c);
  const signal = liveSignal(c, session);
  assert.equal(signal.aborted, false);
  clock.now = 1_000; // still inside the renew deadline (2/3 of 2 s)
  assert.equal(signal.aborted, false);
  clock.now = 10_000; // "resumed" long after the TTL; no timer has run
  assert.equal(signal.aborted, true);
  assert.equal((signal.reason as Error).name, 'SessionJeopardyError');
  assert.throws(() => signal.throwIfAborted());
  assert.equal(session.valid(), false);
  await session.close();
});

test('last-leader record: outside the queue prefix, distinct from the other keys; round trip', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), fc.bigInt({ min: 1n, max: 2n ** 63n }), (n, t) => {
      const k = lastLeaderKey(n);
      assert.equal(k.startsWith(prefixOf(n)), false);
      assert.notEqual(k, hintKey(n));
      assert.notEqual(k, markerKey(n));
      const v = Buffer.from(JSON.stringify({ pid: 1, n }));
      const back = decodeLastLeader(Buffer.from(encodeLastLeader({ value: v, token: t })));
      assert.deepEqual(back, { value: v, token: t });
    }),
  );
  for (const bad of ['', 'null', '{"value":"x"}', '{"value":"x","token":"-1"}', '[1]']) {
    assert.equal(decodeLastLeader(Buffer.from(bad)), undefined, bad);
  }
});
