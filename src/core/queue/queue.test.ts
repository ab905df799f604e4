// Table tests of the lock and election queue's pure parts: the key layout, the requests, the
// decisions and the one wait loop, scripted step by step in both of its modes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueued, headOf, ownsQueue, standingOf, type QueueKv } from './decisions.js';
import { queuePrefix, waiterKey } from './layout.js';
import { enqueueTxn, headCheckTxn, predecessorRange, unlockTxn } from './requests.js';
import { awaitTurn, type TurnAnswer, type TurnOutcome, type TurnRequest } from './turn.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const kv = (key: string, createRevision: bigint, lease = 1n): QueueKv => ({
  key: bytes(key),
  createRevision,
  lease,
});

describe('layout', () => {
  it("is etcd's: name/ + the lease in Go's %x", () => {
    const prefix = queuePrefix(bytes('jobs'));
    assert.equal(text(prefix), 'jobs/');
    assert.equal(text(waiterKey(prefix, 0x694d7ed32c4c2a05n)), 'jobs/694d7ed32c4c2a05');
    assert.equal(text(waiterKey(prefix, -0x1fn)), 'jobs/-1f');
  });
});

describe('requests', () => {
  it('wait on the newest key created before the own one', () => {
    const r = predecessorRange(bytes('a/'), 10n);
    assert.deepEqual(r, {
      key: bytes('a/'),
      prefix: true,
      createOrder: 'descend',
      limit: 1,
      maxCreateRevision: 9n,
    });
  });

  it('queue up with a put if absent, else read the key back; extra ops on both branches', () => {
    const extra = { type: 'get', range: { key: bytes('x') } } as const;
    const t = enqueueTxn(bytes('a/1'), bytes('v'), 1n, [extra]);
    assert.deepEqual(t.compare, [
      { key: bytes('a/1'), target: 'create', operator: '=', operand: 0n },
    ]);
    assert.deepEqual(t.success, [
      { type: 'put', key: bytes('a/1'), value: bytes('v'), lease: 1n },
      extra,
    ]);
    assert.deepEqual(t.failure, [{ type: 'get', range: { key: bytes('a/1') } }, extra]);
  });

  it('check the head on key, lease and the whole prefix at once', () => {
    const t = headCheckTxn(bytes('a/'), { key: bytes('a/1'), token: 7n, lease: 1n });
    assert.deepEqual(
      t.compare.map((c) => [text(c.key), c.prefix ?? false, c.target, c.operator, c.operand]),
      [
        ['a/1', false, 'create', '=', 7n],
        ['a/1', false, 'lease', '=', 1n],
        ['a/', true, 'create', '>', 6n],
      ],
    );
  });

  it('fence an Unlock on the revision known at arrival', () => {
    assert.deepEqual(unlockTxn(bytes('a/1'), 41n).compare, [
      { key: bytes('a/1'), target: 'create', operator: '<', operand: 42n },
    ]);
  });
});

describe('decisions', () => {
  it('tell a created key from a found one, on which lease', () => {
    assert.deepEqual(enqueued(1n, true, 5n, undefined), { type: 'created', token: 5n });
    const mine = kv('a/1', 3n, 1n);
    assert.deepEqual(enqueued(1n, false, 5n, mine), {
      type: 'found',
      token: 3n,
      kv: mine,
      sameLease: true,
    });
    assert.deepEqual(enqueued(1n, false, 5n, undefined), { type: 'vanished' });
    const other = enqueued(2n, false, 5n, mine);
    assert.ok(other.type === 'found' && !other.sameLease);
  });

  it('stand lost, first or behind', () => {
    const me = { token: 5n };
    assert.deepEqual(standingOf(me, undefined, undefined), { type: 'lost' });
    assert.deepEqual(standingOf(me, kv('a/1', 6n), undefined), { type: 'lost' });
    assert.deepEqual(standingOf(me, kv('a/1', 5n), undefined), { type: 'first' });
    assert.deepEqual(standingOf(me, 'guarded', undefined), { type: 'first' });
    const pred = kv('a/2', 4n);
    assert.deepEqual(standingOf(me, kv('a/1', 5n), pred), { type: 'behind', predecessor: pred });
  });

  it('never guess victory from a failed head check', () => {
    const e = { key: bytes('a/1'), token: 5n, lease: 1n };
    assert.equal(headOf(e, true, undefined), 'head');
    assert.equal(headOf(e, false, kv('a/1', 5n, 1n)), 'not-head');
    assert.equal(headOf(e, false, kv('a/1', 5n, 2n)), 'lost');
    assert.equal(headOf(e, false, kv('a/1', 9n, 1n)), 'lost');
    assert.equal(headOf(e, false, undefined), 'lost');
  });

  it('own the queue when the first-created key is the own one', () => {
    assert.ok(ownsQueue({ token: 5n }, kv('a/1', 5n)));
    assert.ok(ownsQueue({ token: 5n }, undefined));
    assert.ok(!ownsQueue({ token: 5n }, kv('a/2', 4n)));
  });
});

/** Drive the wait with scripted answers; returns the requests it made and its outcome. */
function script(
  own: 'read' | 'guarded',
  answers: readonly TurnAnswer<QueueKv>[],
): { requests: TurnRequest<QueueKv>[]; outcome: TurnOutcome | undefined } {
  const turn = awaitTurn<QueueKv>({ key: bytes('a/5'), token: 5n }, bytes('a/'), own);
  const requests: TurnRequest<QueueKv>[] = [];
  let step = turn.next();
  for (const answer of answers) {
    if (step.done) break;
    requests.push(step.value);
    step = turn.next(answer);
  }
  return { requests, outcome: step.done ? step.value : undefined };
}

describe('the wait loop', () => {
  const older = kv('a/3', 3n);

  it('reading the own key: watches both, reads again on any wake, ends at the turn', () => {
    const { requests, outcome } = script('read', [
      { type: 'read', revision: 8n, own: kv('a/5', 5n), predecessor: older },
      { type: 'woken' },
      { type: 'read', revision: 9n, own: kv('a/5', 5n), predecessor: undefined },
    ]);
    assert.deepEqual(
      requests.map((r) => r.type),
      ['read', 'watch', 'read'],
    );
    const watch = requests[1];
    assert.ok(watch?.type === 'watch');
    assert.deepEqual(watch.keys.map(text), ['a/3', 'a/5']);
    assert.equal(watch.fromRevision, 9n);
    assert.deepEqual(outcome, { type: 'first', revision: 9n, gone: undefined });
  });

  it('reading the own key: a lost key ends the wait', () => {
    const { outcome } = script('read', [
      { type: 'read', revision: 8n, own: undefined, predecessor: older },
    ]);
    assert.deepEqual(outcome, { type: 'lost' });
  });

  it("guarded: the predecessor's deletion ends the wait without a read", () => {
    const { requests, outcome } = script('guarded', [
      { type: 'read', revision: 8n, predecessor: older },
      { type: 'deleted', revision: 12n },
    ]);
    assert.equal(requests[0]?.type === 'read' && requests[0].own, undefined);
    assert.ok(requests[1]?.type === 'watch');
    assert.deepEqual(requests[1].keys.map(text), ['a/3']);
    assert.deepEqual(outcome, { type: 'moved-up', gone: { token: 3n, deleteRevision: 12n } });
  });

  it('guarded: after a compaction it reads again and reports the deletion as unknown', () => {
    const { requests, outcome } = script('guarded', [
      { type: 'read', revision: 8n, predecessor: older },
      { type: 'compacted' },
      { type: 'read', revision: 20n, predecessor: undefined },
    ]);
    assert.equal(requests.length, 3);
    assert.deepEqual(outcome, {
      type: 'first',
      revision: 20n,
      gone: { token: 3n, deleteRevision: 0n },
    });
  });
});
