// Each rule of unknown-writes.ts fires where it should and only there: small histories that each
// exercise one rule, checked for what the rewrite did (the verdicts themselves are checked against
// the brute-force oracle in anomalies.test.ts and crosscheck.test.ts).

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { KvInput, KvOperation, KvOutput } from './history.js';
import { checkKv } from './linearizability.js';
import { pruneUnknownWrites } from './unknown-writes.js';

const done = (
  clientId: number,
  call: number,
  ret: number,
  input: KvInput,
  output: KvOutput,
): KvOperation => ({ clientId, input, output, call, return: ret });
const unknown = (clientId: number, call: number, input: KvInput): KvOperation => ({
  clientId,
  input,
  output: undefined,
  call,
  return: Infinity,
});
const put = (key: string, value: string): KvInput => ({ type: 'put', key, value });
const append = (key: string, value: string): KvInput => ({ type: 'append', key, value });
const cas = (key: string, expected: string | null, value: string): KvInput => ({
  type: 'cas',
  key,
  expected,
  value,
});
const get = (key: string): KvInput => ({ type: 'get', key });
const read = (value: string | null): KvOutput => ({ type: 'get', value });
const wrote = { type: 'put' } as const;
const failed = { type: 'cas', ok: false } as const;

void describe('pruneUnknownWrites', () => {
  void it('drops an unknown put nothing saw when no CAS failed after it (rule 1)', () => {
    const history = [unknown(0, 0, put('x', 'a')), done(1, 1, 2, get('x'), read(null))];
    const p = pruneUnknownWrites(history);
    assert.equal(p.dropped, 1);
    assert.equal(p.history.length, 1);
  });

  void it('makes an unknown put opaque when a later failed CAS might need it (rule 2)', () => {
    const history = [
      done(0, 0, 1, put('x', 'b'), wrote),
      unknown(1, 2, put('x', 'a')),
      done(2, 3, 4, cas('x', 'b', 'c'), failed),
    ];
    const p = pruneUnknownWrites(history);
    assert.equal(p.opaque, 1);
    assert.ok(p.opaqueValue !== undefined);
    assert.deepEqual(p.history[1]?.input, put('x', p.opaqueValue));
    // The verdict stands: the put (whatever it wrote) is what made the CAS fail.
    assert.equal(checkKv(history).verdict, 'ok');
  });

  void it('keeps an unknown put that a later failed CAS expected (no rule)', () => {
    const history = [unknown(0, 0, put('x', 'a')), done(1, 1, 2, cas('x', 'a', 'c'), failed)];
    const p = pruneUnknownWrites(history);
    assert.deepEqual([p.dropped, p.opaque, p.bounded], [0, 0, 0]);
    assert.deepEqual(p.history, history);
  });

  void it('bounds a seen unknown put of a unique value by its first observer (rule 3)', () => {
    const history = [
      unknown(0, 0, put('x', 'a')),
      done(1, 5, 6, get('x'), read('a')),
      done(2, 3, 4, get('x'), read('a')),
    ];
    const p = pruneUnknownWrites(history);
    assert.equal(p.bounded, 1);
    assert.deepEqual(p.history[0], { ...history[0], output: wrote, return: 4 });
  });

  void it('bounds an unknown append by the first read that contains it (rule 3)', () => {
    const history = [
      done(0, 0, 1, put('x', 'v1'), wrote),
      unknown(1, 2, append('x', 'v2')),
      done(2, 3, 4, get('x'), read('v1v2')),
    ];
    const p = pruneUnknownWrites(history);
    assert.equal(p.bounded, 1);
    assert.deepEqual(p.history[1], { ...history[1], output: { type: 'append' }, return: 4 });
  });

  void it('leaves a seen unknown put alone when its value is not unique', () => {
    const twice = [
      unknown(0, 0, put('x', 'a')),
      done(1, 0, 1, put('x', 'a'), wrote),
      done(2, 2, 3, get('x'), read('a')),
    ];
    assert.equal(pruneUnknownWrites(twice).bounded, 0);
    const prefix = [
      unknown(0, 0, put('x', 'a')),
      done(1, 0, 1, put('x', 'ab'), wrote),
      done(2, 2, 3, get('x'), read('ab')),
    ];
    assert.equal(pruneUnknownWrites(prefix).bounded, 0);
  });

  void it('does not bound an append whose first character recurs inside other values', () => {
    // "xb" could be "x" followed by "b…": the read does not prove the append happened.
    const history = [
      done(0, 0, 1, put('k', 'ax'), wrote),
      unknown(1, 2, append('k', 'xb')),
      done(2, 2, 3, append('k', 'b'), { type: 'append' }),
      done(3, 4, 5, get('k'), read('axb')),
    ];
    assert.equal(pruneUnknownWrites(history).bounded, 0);
  });

  void it('does not count an unknown CAS that writes the opaque value as an observer', () => {
    // Round 1 makes the CAS write the opaque value (nothing saw "y"); round 2 then finds nothing
    // that could see the append either.
    const history = [
      done(0, 0, 1, put('x', 'a'), wrote),
      unknown(1, 2, append('x', 'b')),
      unknown(2, 3, cas('x', 'ab', 'y')),
      done(3, 4, 5, cas('x', 'z', 'w'), failed),
    ];
    const p = pruneUnknownWrites(history);
    assert.equal(p.opaque, 2);
    assert.deepEqual(p.history[1]?.input, put('x', p.opaqueValue as string));
    assert.equal(checkKv(history).verdict, checkKv(history, { pruneUnknownWrites: false }).verdict);
  });

  void it('gives an unknown CAS an expiry once its expected value is overwritten (rule 4)', () => {
    // The failed CAS expecting "b" keeps the unknown CAS from rules 1 to 3.
    const history = [
      done(0, 0, 1, put('x', 'a'), wrote),
      unknown(1, 2, cas('x', 'a', 'b')),
      done(2, 3, 4, put('x', 'c'), wrote),
      done(0, 5, 6, cas('x', 'b', 'd'), failed),
    ];
    const p = pruneUnknownWrites(history);
    assert.equal(p.expiring, 1);
    assert.equal(p.history[1]?.expiresMs, 4);
  });

  void it('drops an unknown CAS whose expected value nobody wrote (rule 4)', () => {
    const history = [unknown(0, 0, cas('x', 'q', 'b')), done(1, 1, 2, get('x'), read(null))];
    assert.equal(pruneUnknownWrites(history).dropped, 1);
  });

  void it('changes nothing in a history without unknown outcomes', () => {
    const history = [done(0, 0, 1, put('x', 'a'), wrote), done(1, 2, 3, get('x'), read('a'))];
    const p = pruneUnknownWrites(history);
    assert.equal(p.history, history);
  });

  void it('says in a failure report what pruning did', () => {
    const history = [
      unknown(0, 0, put('x', 'a')),
      done(1, 1, 2, get('x'), read('a')),
      done(1, 3, 4, get('x'), read(null)),
    ];
    const result = checkKv(history);
    assert.equal(result.verdict, 'illegal');
    assert.match(result.detail ?? '', /1 given their first observer's return time/);
    assert.deepEqual(result.pruned, { dropped: 0, opaque: 0, bounded: 1, expiring: 0 });
  });
});
