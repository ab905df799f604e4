import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { aged, BroadcastQueue, retransmitLimit } from './broadcast-queue.js';
import type { Update } from './messages.js';

const alive = (name: string, inc = 0): Update => ({
  type: 'alive',
  name,
  addr: `${name}:1`,
  epoch: 0,
  inc,
});

describe('retransmitLimit = mult · ceil(log10(n + 1))', () => {
  const table: [number, number][] = [
    [1, 4],
    [9, 4],
    [10, 8],
    [16, 8],
    [99, 8],
    [128, 12],
    [1000, 16],
  ];
  for (const [n, want] of table)
    it(`n = ${n} → ${want}`, () => assert.equal(retransmitLimit(4, n), want));
});

describe('BroadcastQueue', () => {
  it('keeps one update per member, the newest', () => {
    const q = new BroadcastQueue(10);
    q.enqueue(alive('a', 1), 0);
    q.enqueue(alive('a', 2), 0);
    assert.equal(q.size, 1);
    assert.deepEqual(q.take(5, 3, 0), [alive('a', 2)]);
  });
  it('sends least-sent first and drops an update after `limit` sends', () => {
    const q = new BroadcastQueue(10);
    q.enqueue(alive('a'), 0);
    q.enqueue(alive('b'), 0);
    assert.deepEqual(
      q.take(1, 2, 0).map((u) => u.name),
      ['b'],
    );
    assert.deepEqual(
      q.take(1, 2, 0).map((u) => u.name),
      ['a'],
    );
    assert.deepEqual(
      q
        .take(2, 2, 0)
        .map((u) => u.name)
        .sort(),
      ['a', 'b'],
    );
    assert.equal(q.size, 0);
  });
  it('puts the buddy member first', () => {
    const q = new BroadcastQueue(10);
    for (const n of ['a', 'b', 'c']) q.enqueue(alive(n), 0);
    assert.equal(q.take(1, 9, 0, 'a')[0]?.name, 'a');
  });
  it('ages accusations by their time in the queue', () => {
    const u: Update = {
      type: 'suspect',
      name: 'x',
      epoch: 1,
      inc: 0,
      from: 'y',
      silentForMs: 100,
      reason: 'timeout',
    };
    assert.equal((aged(u, 50) as { silentForMs: number }).silentForMs, 150);
    const q = new BroadcastQueue(10);
    q.enqueue(u, 1000);
    assert.equal((q.take(1, 5, 1300)[0] as { silentForMs: number }).silentForMs, 400);
  });
  it('evicts the most-sent update beyond its capacity', () => {
    const q = new BroadcastQueue(2);
    q.enqueue(alive('a'), 0);
    q.take(1, 9, 0, 'a');
    q.enqueue(alive('b'), 0);
    q.enqueue(alive('c'), 0);
    assert.equal(q.size, 2);
    assert.equal(q.pending('a'), undefined);
  });
});
