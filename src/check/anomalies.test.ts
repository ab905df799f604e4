// Hand-written minimal histories: classic anomalies that must be rejected, and the legal edge
// cases a checker most easily gets wrong (unknown outcomes, closed intervals, reads overlapping
// writes, unknown-outcome writes that pruning must neither drop nor pin down wrongly). Each case is also run through the brute-force oracle, so
// the table checks the oracle as much as the checker.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { bruteForceLinearizable } from './bruteforce.js';
import type { KvOperation, KvValue } from './history.js';
import { checkKv } from './linearizability.js';

/** `'?'` as a return time: the outcome is unknown (no output, return at +∞). */
type Ret = number | '?';

const op = (
  clientId: number,
  call: number,
  ret: Ret,
  input: KvOperation['input'],
  output: KvOperation['output'],
): KvOperation =>
  ret === '?'
    ? { clientId, input, output: undefined, call, return: Infinity }
    : { clientId, input, output, call, return: ret };

const get = (c: number, call: number, ret: Ret, key: string, value: KvValue): KvOperation =>
  op(c, call, ret, { type: 'get', key }, { type: 'get', value });
const put = (c: number, call: number, ret: Ret, key: string, value: string): KvOperation =>
  op(c, call, ret, { type: 'put', key, value }, { type: 'put' });
const append = (c: number, call: number, ret: Ret, key: string, value: string): KvOperation =>
  op(c, call, ret, { type: 'append', key, value }, { type: 'append' });
const del = (c: number, call: number, ret: Ret, key: string): KvOperation =>
  op(c, call, ret, { type: 'delete', key }, { type: 'delete' });
const cas = (
  c: number,
  call: number,
  ret: Ret,
  key: string,
  expected: KvValue,
  value: string,
  ok: boolean,
): KvOperation => op(c, call, ret, { type: 'cas', key, expected, value }, { type: 'cas', ok });

interface Case {
  readonly name: string;
  readonly history: readonly KvOperation[];
  readonly linearizable: boolean;
  readonly absentValue?: '' | null;
  /** The partition the checker must blame, for illegal cases. */
  readonly illegalKey?: string;
}

const ILLEGAL: readonly Case[] = [
  {
    name: 'stale read after an acknowledged write (absent)',
    history: [put(0, 0, 1, 'x', 'a'), get(1, 2, 3, 'x', null)],
    linearizable: false,
    illegalKey: 'x',
  },
  {
    name: 'stale read of an overwritten value',
    history: [put(0, 0, 1, 'x', 'a'), put(0, 2, 3, 'x', 'b'), get(1, 4, 5, 'x', 'a')],
    linearizable: false,
  },
  {
    name: 'read of a value never written',
    history: [put(0, 0, 1, 'x', 'a'), get(1, 2, 3, 'x', 'z')],
    linearizable: false,
  },
  {
    name: 'read of a value on a key never written',
    history: [get(0, 0, 1, 'x', 'a')],
    linearizable: false,
  },
  {
    name: 'lost acknowledged append',
    history: [append(0, 0, 1, 'x', 'a'), append(1, 2, 3, 'x', 'b'), get(2, 4, 5, 'x', 'b')],
    linearizable: false,
  },
  {
    name: 'lost acknowledged put under a concurrent read',
    history: [put(0, 0, 1, 'x', 'a'), put(1, 2, 3, 'x', 'b'), get(2, 2, 9, 'x', null)],
    linearizable: false,
  },
  {
    name: 'both CASes succeed from the same expected value',
    history: [
      put(0, 0, 1, 'x', 'a'),
      cas(1, 2, 5, 'x', 'a', 'b', true),
      cas(2, 2, 5, 'x', 'a', 'c', true),
    ],
    linearizable: false,
  },
  {
    name: 'duplicated apply of one append',
    history: [append(0, 0, 1, 'x', 'a'), get(1, 2, 3, 'x', 'aa')],
    linearizable: false,
  },
  {
    name: 'duplicated apply of one put (old value reappears)',
    history: [
      put(0, 0, 1, 'x', 'a'),
      put(1, 2, 3, 'x', 'b'),
      get(2, 4, 5, 'x', 'b'),
      get(2, 6, 7, 'x', 'a'),
    ],
    linearizable: false,
  },
  {
    name: 'appends observed out of real-time order',
    history: [append(0, 0, 1, 'x', 'a'), append(0, 2, 3, 'x', 'b'), get(1, 4, 5, 'x', 'ba')],
    linearizable: false,
  },
  {
    name: 'reads go backwards during a concurrent write',
    history: [put(0, 0, 10, 'x', 'a'), get(1, 1, 2, 'x', 'a'), get(2, 3, 4, 'x', null)],
    linearizable: false,
  },
  {
    name: 'two readers see two concurrent puts land in opposite orders',
    history: [
      put(0, 0, 10, 'x', 'a'),
      put(1, 0, 10, 'x', 'b'),
      get(2, 11, 12, 'x', 'a'),
      get(2, 13, 14, 'x', 'b'),
    ],
    linearizable: false,
  },
  {
    name: 'CAS fails although the value matched',
    history: [put(0, 0, 1, 'x', 'a'), cas(1, 2, 3, 'x', 'a', 'b', false)],
    linearizable: false,
  },
  {
    name: 'CAS succeeds although the value did not match',
    history: [put(0, 0, 1, 'x', 'a'), cas(1, 2, 3, 'x', 'z', 'b', true)],
    linearizable: false,
  },
  {
    name: 'CAS from absent succeeds on an existing key',
    history: [put(0, 0, 1, 'x', 'a'), cas(1, 2, 3, 'x', null, 'b', true)],
    linearizable: false,
  },
  {
    name: 'deleted key still visible after the delete returned',
    history: [put(0, 0, 1, 'x', 'a'), del(0, 2, 3, 'x'), get(1, 4, 5, 'x', 'a')],
    linearizable: false,
  },
  {
    name: 'read returns a value written only after the read returned',
    history: [get(0, 0, 1, 'x', 'a'), put(1, 2, 3, 'x', 'a')],
    linearizable: false,
  },
  {
    name: 'write visible on another key (partitions must not leak)',
    history: [put(0, 0, 1, 'x', 'a'), get(1, 2, 3, 'y', 'a')],
    linearizable: false,
    illegalKey: 'y',
  },
  {
    name: 'an unknown write, once observed, cannot be undone',
    history: [put(0, 0, '?', 'x', 'a'), get(1, 1, 2, 'x', 'a'), get(1, 3, 4, 'x', null)],
    linearizable: false,
  },
  {
    name: 'an unknown delete, once observed, cannot be undone',
    history: [
      put(0, 0, 1, 'x', 'a'),
      del(1, 2, '?', 'x'),
      get(2, 3, 4, 'x', null),
      get(2, 5, 6, 'x', 'a'),
    ],
    linearizable: false,
  },
  {
    name: 'an unknown append applies at most once',
    history: [append(0, 0, '?', 'x', 'a'), get(1, 1, 2, 'x', 'aa')],
    linearizable: false,
  },
  {
    name: 'an unknown write cannot take effect before its call',
    history: [get(0, 0, 1, 'x', 'a'), put(1, 2, '?', 'x', 'a')],
    linearizable: false,
  },
  {
    name: 'a read with unknown outcome does not excuse a stale read',
    history: [put(0, 0, 1, 'x', 'a'), get(1, 2, '?', 'x', 'z'), get(2, 3, 4, 'x', null)],
    linearizable: false,
  },
  {
    name: 'CAS chain broken: the second CAS is lost',
    history: [
      cas(0, 0, 1, 'x', null, 'a', true),
      cas(1, 2, 3, 'x', 'a', 'b', true),
      get(2, 4, 5, 'x', 'a'),
    ],
    linearizable: false,
  },
  {
    name: 'absent is not the empty string (null convention)',
    history: [get(0, 0, 1, 'x', '')],
    linearizable: false,
  },
  {
    name: 'Porcupine convention: a fresh key reads "", not a value',
    history: [get(0, 0, 1, 'x', 'a')],
    linearizable: false,
    absentValue: '',
  },
  {
    name: 'Porcupine convention: a stale read of the last append',
    history: [
      append(0, 0, 1, 'k', 'x 0 0 y'),
      append(0, 2, 3, 'k', 'x 0 3 y'),
      get(0, 4, 5, 'k', 'x 0 0 y'),
    ],
    linearizable: false,
    absentValue: '',
  },
  {
    name: 'the illegal key is the one blamed among several legal ones',
    history: [
      put(0, 0, 1, 'a', '1'),
      get(1, 2, 3, 'a', '1'),
      put(0, 4, 5, 'b', '2'),
      get(1, 6, 7, 'b', null),
      put(0, 8, 9, 'c', '3'),
      get(1, 10, 11, 'c', '3'),
    ],
    linearizable: false,
    illegalKey: 'b',
  },
];

// Unknown-outcome writes, where pruning them first (unknown-writes.ts) could go wrong.
const UNKNOWN_WRITES: readonly Case[] = [
  {
    name: 'an observed unknown put took effect before its first observer returned',
    history: [
      put(0, 0, '?', 'x', 'a'),
      put(1, 1, 2, 'x', 'b'),
      get(2, 3, 4, 'x', 'a'),
      get(2, 5, 6, 'x', 'b'),
    ],
    linearizable: false,
  },
  {
    name: 'an observed unknown put may take effect long after its call',
    history: [
      put(0, 0, '?', 'x', 'a'),
      put(1, 1, 2, 'x', 'b'),
      get(2, 3, 4, 'x', 'b'),
      get(2, 5, 6, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'an unknown put seen through an append took effect before the read',
    history: [put(0, 0, '?', 'x', 'a'), append(1, 1, 2, 'x', 'b'), get(2, 3, 4, 'x', 'ab')],
    linearizable: true,
  },
  {
    name: 'an unknown append, once seen inside a value, cannot be undone',
    history: [
      append(0, 0, '?', 'x', 'b'),
      put(1, 1, 2, 'x', 'a'),
      get(2, 3, 4, 'x', 'ab'),
      get(2, 5, 6, 'x', 'a'),
    ],
    linearizable: false,
  },
  {
    name: 'an unobserved unknown put explains nothing (and is not needed)',
    history: [
      put(0, 0, '?', 'x', 'a'),
      get(1, 1, 2, 'x', null),
      put(1, 3, 4, 'x', 'b'),
      get(1, 5, 6, 'x', 'b'),
    ],
    linearizable: true,
  },
  {
    name: 'an unobserved unknown put does not excuse a stale read',
    history: [put(0, 0, 1, 'x', 'b'), put(1, 0, '?', 'x', 'a'), get(2, 2, 3, 'x', null)],
    linearizable: false,
  },
  {
    name: 'an unknown put nothing read is needed to explain a failed CAS',
    history: [put(0, 0, 1, 'x', 'a'), put(1, 2, '?', 'x', 'b'), cas(2, 3, 4, 'x', 'a', 'c', false)],
    linearizable: true,
  },
  {
    name: 'an unknown put a failed CAS expected cannot be what made it fail',
    history: [
      put(0, 0, '?', 'x', 'v'),
      cas(1, 1, 2, 'x', null, 'z', false),
      cas(1, 3, 4, 'x', 'v', 'w', false),
    ],
    linearizable: false,
  },
  {
    name: 'an unknown put of a value another put also wrote is not bounded by its first reader',
    history: [
      put(0, 0, '?', 'x', 'a'),
      put(1, 0, 1, 'x', 'a'),
      get(2, 2, 3, 'x', 'a'),
      put(1, 4, 5, 'x', 'b'),
      get(2, 8, 9, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'an unknown put whose value is a prefix of another is not bounded by a read of that one',
    history: [
      put(0, 0, '?', 'x', 'a'),
      put(1, 0, 1, 'x', 'ab'),
      get(2, 2, 3, 'x', 'ab'),
      put(1, 4, 5, 'x', 'c'),
      get(2, 8, 9, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'an unknown CAS cannot take effect once its expected value is overwritten',
    history: [
      put(0, 0, 1, 'x', 'a'),
      op(1, 2, '?', { type: 'cas', key: 'x', expected: 'a', value: 'b' }, undefined),
      put(2, 3, 4, 'x', 'c'),
      get(0, 5, 6, 'x', 'b'),
    ],
    linearizable: false,
  },
  {
    name: 'an unknown CAS may still take effect before its expected value is overwritten',
    history: [
      put(0, 0, 1, 'x', 'a'),
      op(1, 2, '?', { type: 'cas', key: 'x', expected: 'a', value: 'b' }, undefined),
      get(0, 3, 4, 'x', 'b'),
      put(2, 5, 6, 'x', 'c'),
    ],
    linearizable: true,
  },
  {
    name: 'an unknown CAS expecting a value nobody wrote never takes effect',
    history: [
      op(1, 0, '?', { type: 'cas', key: 'x', expected: 'q', value: 'b' }, undefined),
      get(0, 1, 2, 'x', 'b'),
    ],
    linearizable: false,
  },
  {
    name: 'an unknown append seen only by an unknown CAS nothing saw',
    history: [
      put(0, 0, 1, 'x', 'a'),
      append(1, 2, '?', 'x', 'b'),
      op(2, 3, '?', { type: 'cas', key: 'x', expected: 'ab', value: 'y' }, undefined),
      cas(3, 4, 5, 'x', 'a', 'w', false),
    ],
    linearizable: true,
  },
  {
    name: 'a chain of unknown CASes, each seen only by the next',
    history: [
      put(0, 0, 1, 'x', 'a'),
      op(1, 2, '?', { type: 'cas', key: 'x', expected: 'a', value: 'b' }, undefined),
      op(2, 3, '?', { type: 'cas', key: 'x', expected: 'b', value: 'c' }, undefined),
      get(0, 4, 5, 'x', 'c'),
    ],
    linearizable: true,
  },
];

const LEGAL: readonly Case[] = [
  { name: 'empty history', history: [], linearizable: true },
  {
    name: 'an unknown write linearizing late',
    history: [put(0, 0, '?', 'x', 'a'), get(1, 1, 2, 'x', null), get(1, 10, 11, 'x', 'a')],
    linearizable: true,
  },
  {
    name: 'an unknown write that never took effect',
    history: [put(0, 0, '?', 'x', 'a'), get(1, 1, 2, 'x', null), get(1, 10, 11, 'x', null)],
    linearizable: true,
  },
  {
    name: 'an unknown write linearized after a later acknowledged write',
    history: [put(0, 0, '?', 'x', 'a'), put(1, 1, 2, 'x', 'b'), get(2, 3, 4, 'x', 'a')],
    linearizable: true,
  },
  {
    name: 'a concurrent read sees the new value before the write returns',
    history: [put(0, 0, 10, 'x', 'a'), get(1, 1, 2, 'x', 'a')],
    linearizable: true,
  },
  {
    name: 'a concurrent read sees the old value',
    history: [put(0, 0, 10, 'x', 'a'), get(1, 1, 2, 'x', null)],
    linearizable: true,
  },
  {
    name: 'closed intervals: a read called as the write returns may see the old value',
    history: [put(0, 0, 5, 'x', 'a'), get(1, 5, 6, 'x', null)],
    linearizable: true,
  },
  {
    name: 'zero-length intervals at the same instant are concurrent',
    history: [put(0, 3, 3, 'x', 'a'), get(1, 3, 3, 'x', null), get(2, 3, 3, 'x', 'a')],
    linearizable: true,
  },
  {
    name: 'two concurrent CASes from one value: one wins, one fails',
    history: [
      put(0, 0, 1, 'x', 'a'),
      cas(1, 2, 5, 'x', 'a', 'b', true),
      cas(2, 2, 5, 'x', 'a', 'c', false),
      get(0, 6, 7, 'x', 'b'),
    ],
    linearizable: true,
  },
  {
    name: 'concurrent appends land in the order opposite to their calls',
    history: [append(0, 0, 5, 'x', 'a'), append(1, 1, 5, 'x', 'b'), get(2, 6, 7, 'x', 'ba')],
    linearizable: true,
  },
  {
    name: 'an unknown CAS that took effect',
    history: [
      put(0, 0, 1, 'x', 'a'),
      op(1, 2, '?', { type: 'cas', key: 'x', expected: 'a', value: 'b' }, undefined),
      get(2, 3, 4, 'x', 'b'),
    ],
    linearizable: true,
  },
  {
    name: 'an unknown CAS that did not take effect',
    history: [
      put(0, 0, 1, 'x', 'a'),
      op(1, 2, '?', { type: 'cas', key: 'x', expected: 'a', value: 'b' }, undefined),
      get(2, 3, 4, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'a read with unknown outcome constrains nothing',
    history: [put(0, 0, 1, 'x', 'a'), get(1, 2, '?', 'x', 'nonsense')],
    linearizable: true,
  },
  {
    name: 'delete, then put, then read',
    history: [
      put(0, 0, 1, 'x', 'a'),
      del(0, 2, 3, 'x'),
      get(1, 4, 5, 'x', null),
      put(0, 6, 7, 'x', 'b'),
      get(1, 8, 9, 'x', 'b'),
    ],
    linearizable: true,
  },
  {
    name: 'appending to a deleted key starts over',
    history: [
      append(0, 0, 1, 'x', 'a'),
      del(0, 2, 3, 'x'),
      append(0, 4, 5, 'x', 'b'),
      get(1, 6, 7, 'x', 'b'),
    ],
    linearizable: true,
  },
  {
    name: 'independent keys interleaved',
    history: [
      put(0, 0, 4, 'x', 'a'),
      put(1, 1, 3, 'y', 'b'),
      get(2, 2, 5, 'x', 'a'),
      get(0, 5, 6, 'y', 'b'),
      get(1, 4, 7, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'CAS from absent on a fresh key',
    history: [cas(0, 0, 1, 'x', null, 'a', true), get(1, 2, 3, 'x', 'a')],
    linearizable: true,
  },
  {
    name: 'Porcupine convention: a fresh key reads ""',
    history: [get(0, 0, 1, 'x', ''), append(0, 2, 3, 'x', 'a'), get(0, 4, 5, 'x', 'a')],
    linearizable: true,
    absentValue: '',
  },
  {
    name: 'Porcupine convention: CAS from null matches ""',
    history: [cas(0, 0, 1, 'x', null, 'a', true), get(0, 2, 3, 'x', 'a')],
    linearizable: true,
    absentValue: '',
  },
  {
    name: 'a long write overlapping several reads that flip once',
    history: [
      put(0, 0, 20, 'x', 'a'),
      get(1, 1, 2, 'x', null),
      get(2, 3, 4, 'x', null),
      get(1, 5, 6, 'x', 'a'),
      get(2, 7, 8, 'x', 'a'),
    ],
    linearizable: true,
  },
  {
    name: 'three concurrent puts and a read after all of them',
    history: [
      put(0, 0, 5, 'x', 'a'),
      put(1, 0, 5, 'x', 'b'),
      put(2, 0, 5, 'x', 'c'),
      get(0, 6, 7, 'x', 'b'),
    ],
    linearizable: true,
  },
];

void describe('hand-written histories', () => {
  void it('has at least 30 cases, both legal and illegal', () => {
    assert.ok(ILLEGAL.length + LEGAL.length >= 30, `${ILLEGAL.length + LEGAL.length} cases`);
    assert.ok(UNKNOWN_WRITES.some((c) => c.linearizable));
    assert.ok(UNKNOWN_WRITES.some((c) => !c.linearizable));
    assert.ok(ILLEGAL.every((c) => !c.linearizable) && LEGAL.every((c) => c.linearizable));
  });

  for (const c of [...ILLEGAL, ...LEGAL, ...UNKNOWN_WRITES]) {
    void it(`${c.linearizable ? 'legal' : 'illegal'}: ${c.name}`, () => {
      const absentValue = c.absentValue ?? null;
      const result = checkKv(c.history, { absentValue });
      assert.equal(result.verdict, c.linearizable ? 'ok' : 'illegal', result.detail);
      const raw = checkKv(c.history, { absentValue, pruneUnknownWrites: false });
      assert.equal(raw.verdict, result.verdict, `without pruning: ${raw.detail}`);
      assert.equal(bruteForceLinearizable(c.history, { absentValue }), c.linearizable, 'oracle');
      if (!c.linearizable) assert.ok(result.detail !== undefined && result.detail.length > 0);
      if (c.illegalKey !== undefined) assert.equal(result.illegalKey, c.illegalKey);
    });
  }
});
