// The moment a report dates a linearizability anomaly: the first return time at which the
// history, cut there, already fails, never a cut that fails only because it dropped a write.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KvOperation } from '../../src/check/history.js';
import { earliestFailure, historyAt } from '../../src/chaos/workloads/earliest-failure.js';

const put = (c: number, v: string, call: number, ret: number): KvOperation => ({
  clientId: c,
  input: { type: 'put', key: 'k', value: v },
  output: { type: 'put' },
  call,
  return: ret,
});
const get = (c: number, v: string | null, call: number, ret: number): KvOperation => ({
  clientId: c,
  input: { type: 'get', key: 'k' },
  output: { type: 'get', value: v },
  call,
  return: ret,
});

test('a stale read is dated by its return', () => {
  const h = [put(0, 'a', 0, 1), get(1, null, 2, 3), put(0, 'b', 4, 5), get(1, 'b', 6, 7)];
  assert.equal(earliestFailure(h), 3);
});

test('a read of a write called before it returned is no failure at any cut', () => {
  // The read returns 'a' at 3; the write of 'a' was called at 2 and returns at 4.
  const h = [get(1, 'a', 1, 3), put(0, 'a', 2, 4)];
  assert.equal(earliestFailure(h), Infinity);
  assert.equal(historyAt(h, 3)[1]?.output, undefined);
});
