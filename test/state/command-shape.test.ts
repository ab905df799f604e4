// A command is applied by every member, so one of the wrong shape must never reach apply: it
// came from a peer's forwarding frame (forward-frame.ts) the leader proposed as it was. Such a
// command decodes to null and applies as a malformed command on every member alike, instead of
// throwing inside each member's apply (and again at every restart, as the log replays).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { decodeCommand, encodeCommand, TXN_NESTING_MAX } from '../../src/core/state/command.js';
import { ERR_MALFORMED_COMMAND, EtcdMachine } from '../../src/core/state/etcd-machine.js';
import type { TxnRequest } from '../../src/core/state/kv-types.js';

const enc = new TextEncoder();

// Each threw a TypeError or an AssertionError in EtcdMachine.apply before.
const MALFORMED = [
  '{"type":"txn","request":{}}',
  '{"type":"put","request":{}}',
  '{"type":"leaseCheckpoint"}',
  '{"type":"leaseCheckpoint","checkpoints":[{"id":{"$n":"5"}}]}',
  '{"type":"leaseCheckpoint","checkpoints":[{"id":5,"remainingTtlSeconds":1}]}',
  '{"type":"leaseCheckpoint","checkpoints":[{"id":{"$n":"5"},"remainingTtlSeconds":"1"}]}',
  '{"type":"compact","request":{"revision":"x"}}',
  '{"type":"deleteRange","request":{"key":5}}',
  '{"type":"txn","request":{"compare":[{"key":{"$b":"61"},"result":"EQUAL",' +
    '"target":"__proto__"}],"success":[],"failure":[]}}',
  '{"type":"txn","request":{"compare":[],"success":[{"type":"put"}],"failure":[]}}',
  '{"type":"leaseGrant","id":5,"ttlSeconds":10,"nowMs":0}',
];

test('commands of the wrong shape decode to null and apply as malformed', () => {
  for (const text of MALFORMED) {
    assert.equal(decodeCommand(enc.encode(text)), null, text);
    const m = new EtcdMachine();
    const r = m.apply(logIndex(1), enc.encode(text));
    assert.deepEqual(r, { type: 'error', error: ERR_MALFORMED_COMMAND }, text);
  }
});

test('a txn nested deeper than TXN_NESTING_MAX does not decode', () => {
  const nest = (depth: number): TxnRequest =>
    depth === 1
      ? { compare: [], success: [], failure: [] }
      : { compare: [], success: [{ type: 'txn', request: nest(depth - 1) }], failure: [] };
  const ok = encodeCommand({ type: 'txn', request: nest(TXN_NESTING_MAX) });
  assert.notEqual(decodeCommand(ok), null);
  const deep = encodeCommand({ type: 'txn', request: nest(TXN_NESTING_MAX + 1) });
  assert.equal(decodeCommand(deep), null);
});

test('a checkpoint and its reset (remaining null) round-trip through the log encoding', () => {
  for (const remainingTtlSeconds of [2.5, 0, null]) {
    const cmd = {
      type: 'leaseCheckpoint' as const,
      checkpoints: [{ id: 7n, remainingTtlSeconds }],
    };
    assert.deepEqual(decodeCommand(encodeCommand(cmd)), cmd);
  }
});
