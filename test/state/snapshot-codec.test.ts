// The key space's binary snapshot (src/core/state/snapshot-codec.ts): a restored machine is the
// machine that was snapshotted, whatever its keys, values, tombstones and leases, and a store far
// larger than tagged JSON could spell (hex text past V8's longest string) is written and read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { encodeCommand, type Command } from '../../src/core/state/command.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import { ServerMachine, encodeEtcdEntry } from '../../src/replica/member/server-machine.js';

const b = (s: string): Uint8Array => new TextEncoder().encode(s);

function machineWith(cmds: Command[]): EtcdMachine {
  const m = new EtcdMachine();
  cmds.forEach((c, i) => m.apply(logIndex(i + 1), encodeCommand(c)));
  return m;
}

test('a restored key space equals the one snapshotted', () => {
  const m = machineWith([
    { type: 'leaseGrant', id: 7n, ttlSeconds: 30, nowMs: 1000 },
    { type: 'put', request: { key: b('a'), value: b('1') } },
    { type: 'put', request: { key: b('a'), value: b('2'), lease: 7n } },
    { type: 'put', request: { key: Uint8Array.from([0, 255, 10]), value: new Uint8Array(0) } },
    { type: 'deleteRange', request: { key: b('a') } },
    { type: 'put', request: { key: b('b'), value: b('x'), lease: 7n } },
    { type: 'leaseCheckpoint', checkpoints: [{ id: 7n, remainingTtlSeconds: 12 }] },
    { type: 'compact', request: { revision: 3 } },
  ]);
  const r = new EtcdMachine();
  r.restore(m.snapshot());
  assert.equal(r.digest(), m.digest());
  assert.equal(r.appliedIndex, m.appliedIndex);
  assert.deepEqual(r.snapshot(), m.snapshot(), 'snapshot → restore → snapshot is stable');
});

test('a server snapshot of 600 MiB is written and restored', () => {
  const sm = new ServerMachine();
  const value = new Uint8Array(1024 * 1024).fill(0x5a);
  for (let i = 1; i <= 600; i++) {
    const put: Command = { type: 'put', request: { key: b(`k${i}`), value } };
    sm.apply(logIndex(i), encodeEtcdEntry(put, 1));
  }
  const snap = sm.snapshot();
  assert.ok(snap.length > 600 * 1024 * 1024, `${snap.length} bytes`);
  assert.ok(snap.length < 601 * 1024 * 1024, 'the store once, not spelled as text');
  const r = new ServerMachine();
  r.restore(snap);
  assert.equal(r.digest(), sm.digest());
});
