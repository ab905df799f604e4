// Every entry a member writes is one versioned record (src/replica/member/log-record.ts): a
// member refuses an entry in a format it does not read instead of applying it by guesswork, and
// the format the leader writes is the oldest any member of the configuration reads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { decodeCommand } from '../../src/core/state/command.js';
import {
  clusterLogFormat,
  encodeRecord,
  LOG_FORMAT_MAX,
  LogFormatError,
  readRecord,
  RECORD_ETCD,
  RECORD_MEMBER,
} from '../../src/replica/member/log-record.js';
import { encodeTagged } from '../../src/core/state/tagged-json.js';
import {
  decodeEtcdEntry,
  encodeEtcdEntry,
  encodeMemberEntry,
  ServerMachine,
  wellFormedEntry,
} from '../../src/replica/member/server-machine.js';

const put = {
  type: 'put',
  request: { key: new TextEncoder().encode('k'), value: new TextEncoder().encode('v') },
} as const;

test('an entry is a record: format, kind, then the command', () => {
  const e = encodeEtcdEntry(put, 1);
  assert.equal(e[0], 1, 'format byte');
  assert.equal(e[1], RECORD_ETCD, 'kind byte');
  const rec = readRecord(logIndex(7), e);
  assert.ok(rec);
  assert.deepEqual(decodeCommand(rec.body), put);
  assert.deepEqual(decodeEtcdEntry(e), put);
  assert.ok(wellFormedEntry(e));
  const m = encodeMemberEntry({ type: 'memberDelete', id: '3' }, 1);
  assert.ok(wellFormedEntry(m));
  assert.equal(decodeEtcdEntry(m), null, 'a member command is not an etcd command');
  assert.ok(wellFormedEntry(new Uint8Array(0)), 'the no-op');
});

test('a format this member does not read is refused with the entry and the format', () => {
  const future = Uint8Array.from([LOG_FORMAT_MAX + 1, RECORD_ETCD, 0x7b, 0x7d]);
  assert.throws(
    () => readRecord(logIndex(42), future),
    (e: unknown) =>
      e instanceof LogFormatError &&
      e.index === 42 &&
      e.format === LOG_FORMAT_MAX + 1 &&
      /log entry 42 is in record format 2, and this member reads formats 1 to 1/.test(e.message),
  );
  assert.throws(() => readRecord(logIndex(1), Uint8Array.from([0, RECORD_ETCD])), LogFormatError);
  assert.equal(wellFormedEntry(future), false);
  assert.equal(decodeEtcdEntry(future), null);
  assert.throws(() => encodeRecord(RECORD_ETCD, new Uint8Array(0), LOG_FORMAT_MAX + 1));
});

test('the server machine stops at an unreadable entry and applies nothing of it', () => {
  const sm = new ServerMachine();
  sm.apply(logIndex(1), encodeEtcdEntry(put, 1));
  const digest = sm.digest();
  const told: LogFormatError[] = [];
  sm.onUnreadable = (e) => told.push(e);
  const future = Uint8Array.from([LOG_FORMAT_MAX + 1, RECORD_ETCD, ...encodeEtcdEntry(put, 1)]);
  assert.throws(() => sm.apply(logIndex(2), future), LogFormatError);
  assert.equal(told.length, 1);
  assert.equal(told[0]?.index, 2);
  assert.equal(sm.etcd.appliedIndex, 1, 'the key space did not move');
  assert.equal(sm.digest(), digest);
});

test('the cluster writes the oldest format its members read', () => {
  assert.equal(clusterLogFormat([]), LOG_FORMAT_MAX);
  assert.equal(clusterLogFormat([LOG_FORMAT_MAX, LOG_FORMAT_MAX]), LOG_FORMAT_MAX);
  assert.equal(clusterLogFormat([LOG_FORMAT_MAX, undefined]), 1, 'not published: format 1');
  assert.equal(clusterLogFormat([LOG_FORMAT_MAX + 5]), LOG_FORMAT_MAX, 'never newer than ours');
  const sm = new ServerMachine();
  const rec = (id: string, logFormatMax?: number): Uint8Array =>
    encodeMemberEntry(
      {
        type: 'memberSet',
        member: {
          id,
          name: `n${id}`,
          peerUrls: [],
          clientUrls: [],
          ...(logFormatMax !== undefined ? { logFormatMax } : {}),
        },
      },
      1,
    );
  sm.apply(logIndex(1), rec('1', LOG_FORMAT_MAX));
  assert.equal(sm.writeFormat([1, 2]), 1, 'member 2 has not published');
  sm.apply(logIndex(2), rec('2', LOG_FORMAT_MAX));
  assert.equal(sm.writeFormat([1, 2]), LOG_FORMAT_MAX);
});

test('a member command of the wrong shape changes nothing, on every member alike', () => {
  // Before, `cmd.member.id` threw a TypeError inside every member's apply of such an entry.
  for (const cmd of [{ type: 'memberSet' }, { type: 'memberSet', member: { id: 3 } }, {}]) {
    const m = new ServerMachine();
    const entry = encodeRecord(RECORD_MEMBER, encodeTagged(cmd), 1);
    assert.deepEqual(m.apply(logIndex(1), entry), { type: 'member' }, JSON.stringify(cmd));
    assert.equal(m.memberTable().size, 0);
  }
});
