// Client sessions over the etcd key space (thesis §6.3): a retried command is answered from the
// session table and not applied again, the table survives snapshots, and the planted
// lostDuplicateDetection mutant really applies a retry twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { logIndex } from '../../src/core/base/units.js';
import { isEtcdError } from '../../src/core/state/etcd-errors.js';
import { encodeCommand, type Command } from '../../src/core/state/command.js';
import { EtcdMachine, type EtcdResult } from '../../src/core/state/etcd-machine.js';
import {
  decodeSessionEntry,
  encodeSessionEntry,
  SessionMachine,
  SESSIONS_MAX,
} from '../../src/core/state/session-machine.js';

const b = (s: string): Uint8Array => new TextEncoder().encode(s);
const put = (key: string, value: string): Command => ({
  type: 'put',
  request: { key: b(key), value: b(value) },
});

class Log {
  readonly etcd = new EtcdMachine();
  readonly m: SessionMachine<EtcdResult>;
  private index = 0;
  constructor(mutants = NO_MUTANTS) {
    this.m = new SessionMachine(this.etcd, mutants);
  }
  apply(session: number, seq: number, cmd: Command): EtcdResult | undefined {
    const data = encodeSessionEntry({ session, seq, command: encodeCommand(cmd) });
    return this.m.apply(logIndex(++this.index), data)?.result;
  }
  noop(): void {
    assert.equal(this.m.apply(logIndex(++this.index), new Uint8Array(0)), undefined);
  }
  value(key: string): string | undefined {
    const r = this.etcd.range({ key: b(key) });
    assert.ok(!isEtcdError(r));
    const kv = r.kvs[0];
    return kv && new TextDecoder().decode(kv.value);
  }
}

test('an entry carries session, seq and the command bytes unchanged', () => {
  const command = encodeCommand(put('k', 'v'));
  const e = decodeSessionEntry(encodeSessionEntry({ session: 2 ** 40 + 3, seq: 7, command }));
  assert.ok(e);
  assert.equal(e.session, 2 ** 40 + 3);
  assert.equal(e.seq, 7);
  assert.deepEqual(e.command, command);
  assert.equal(decodeSessionEntry(new Uint8Array(0)), undefined);
  assert.throws(() => decodeSessionEntry(command), /malformed entry/);
});

test('a retried command is answered from the session and not applied again', () => {
  const l = new Log();
  l.noop();
  const first = l.apply(1, 1, put('k', 'a'));
  assert.equal(first?.type, 'put');
  l.apply(2, 1, put('k', 'b'));
  const retry = l.apply(1, 1, put('k', 'a'));
  assert.deepEqual(retry, first, 'the retry gets the first answer, revision included');
  assert.equal(l.value('k'), 'b', 'the retry did not overwrite the later write');
  assert.equal(l.etcd.revision, 3);
  // A retry older than the session's last command is dropped too.
  l.apply(1, 2, put('k', 'c'));
  l.apply(1, 1, put('k', 'a'));
  assert.equal(l.value('k'), 'c');
  assert.equal(l.m.lastSeq(1), 2);
});

test('with lostDuplicateDetection planted, a retry is applied twice', () => {
  const l = new Log(new Set(['lostDuplicateDetection']));
  l.apply(1, 1, put('k', 'a'));
  l.apply(2, 1, put('k', 'b'));
  l.apply(1, 1, put('k', 'a'));
  assert.equal(l.value('k'), 'a');
  assert.equal(l.etcd.revision, 4);
});

test('sessions and cached results survive snapshot and restore', () => {
  const l = new Log();
  const grant = l.apply(1, 1, { type: 'leaseGrant', id: 0n, ttlSeconds: 60, nowMs: 100 });
  assert.equal(grant?.type, 'leaseGrant');
  const p = l.apply(2, 1, {
    type: 'put',
    request: { key: b('k'), value: b('v'), prevKv: true },
  });
  l.apply(2, 2, put('k', 'w'));
  const copy = new Log();
  copy.m.restore(l.m.snapshot());
  assert.equal(copy.m.digest(), l.m.digest());
  assert.equal(copy.m.sessionCount, 2);
  // Retries after the restore get the same answers: bigint lease IDs and bytes round-trip.
  assert.deepEqual(copy.m.apply(logIndex(10), retryOf(1, 1)), {
    session: 1,
    seq: 1,
    result: grant,
  });
  assert.notEqual(p, undefined);
  assert.equal(copy.value('k'), 'w');
  assert.equal(copy.etcd.digest(), l.etcd.digest());
});

function retryOf(session: number, seq: number): Uint8Array {
  return encodeSessionEntry({ session, seq, command: encodeCommand(put('ignored', 'x')) });
}

test('the digest covers the session table', () => {
  const a = new Log();
  const c = new Log();
  a.apply(1, 1, put('k', 'v'));
  c.apply(1, 2, put('k', 'v'));
  assert.equal(a.etcd.digest(), c.etcd.digest());
  assert.notEqual(a.m.digest(), c.m.digest());
});

test('the least recently used session is evicted beyond SESSIONS_MAX', () => {
  const l = new Log();
  for (let s = 1; s <= SESSIONS_MAX + 1; s++) l.apply(s, 1, put(`k${s % 3}`, `v${s}`));
  assert.equal(l.m.sessionCount, SESSIONS_MAX);
  assert.equal(l.m.lastSeq(1), 0, 'session 1 was the oldest');
  assert.equal(l.m.lastSeq(2), 1);
});
