// Table tests of the stale-write definition shared by the split-brain demo and the stress test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkHistory, describeWrite, type AcceptedWrite } from '../../src/demo/stale-writes.js';

/** `a@1#1 b@2#1 …` → writes. */
function history(text: string): AcceptedWrite[] {
  return text
    .split(/\s+/)
    .filter((s) => s !== '')
    .map((s) => {
      const m = /^(\w+)@(\d+)#(\d+)$/.exec(s);
      if (m === null) throw new Error(`bad write ${s}`);
      return { writer: m[1] ?? '', token: BigInt(m[2] ?? '0'), seq: Number(m[3]) };
    });
}

const cases: ReadonlyArray<{
  name: string;
  history: string;
  stale: string[];
  interleaved: string[];
  holders: number;
}> = [
  { name: 'empty', history: '', stale: [], interleaved: [], holders: 0 },
  {
    name: 'successive tenures',
    history: 'a@1#1 a@1#2 b@2#1 b@2#2 a@5#1',
    stale: [],
    interleaved: [],
    holders: 3,
  },
  {
    name: 'equal tokens are one holder retrying',
    history: 'a@3#1 a@3#1 a@3#2',
    stale: [],
    interleaved: [],
    holders: 1,
  },
  {
    name: 'a zombie writes after its successor',
    history: 'a@1#1 b@2#1 b@2#2 a@1#2',
    stale: ['a@1#2'],
    interleaved: ['b@2#1', 'b@2#2'],
    holders: 2,
  },
  {
    name: 'stale against any earlier write, not only the previous one',
    history: 'a@1#1 c@9#1 b@5#1',
    stale: ['b@5#1'],
    interleaved: [],
    holders: 3,
  },
  {
    name: 'a late first write of an old holder is stale without interleaving',
    history: 'b@2#1 a@1#1',
    stale: ['a@1#1'],
    interleaved: [],
    holders: 2,
  },
  {
    name: 'the same writer with a new token is a new holder',
    history: 'a@1#1 a@4#1 a@1#2',
    stale: ['a@1#2'],
    interleaved: ['a@4#1'],
    holders: 2,
  },
];

for (const c of cases) {
  test(`checkHistory: ${c.name}`, () => {
    const v = checkHistory(history(c.history));
    assert.deepEqual(
      v.staleWrites.map((s) => describeWrite(s.write)),
      c.stale,
    );
    assert.deepEqual(
      v.interleavings.map((i) => describeWrite(i.intruder)),
      c.interleaved,
    );
    assert.equal(v.holders, c.holders);
    assert.equal(v.writes, history(c.history).length);
  });
}

test('checkHistory: a stale write names the highest token before it', () => {
  const v = checkHistory(history('a@1#1 c@9#1 b@5#1 b@5#2'));
  assert.deepEqual(
    v.staleWrites.map((s) => [s.index, s.highestBefore]),
    [
      [2, 9n],
      [3, 9n],
    ],
  );
});
