// WAL recovery: a torn tail is cut off, corruption before the tail refuses to start, snapshot
// markers drop what they cover, and a rewritten index truncates what followed it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import type { Entry } from '../../src/core/raft/types.js';
import {
  CorruptWalError,
  encodeEntries,
  encodeHardState,
  encodeSnapshot,
  encodeSnapshotMarker,
  recover,
} from '../../src/replica/wal.js';

const enc = new TextEncoder();
const entry = (i: number, t: number, text = `e${i}`): Entry => ({
  index: logIndex(i),
  term: term(t),
  type: 'normal',
  data: enc.encode(text),
});
const cat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
const opts = { mutants: NO_MUTANTS };
const hs = (t: number, v: number, c: number) => ({
  term: term(t),
  vote: nodeId(v),
  commit: logIndex(c),
});

test('a clean WAL recovers entries and the last hard state', () => {
  const wal = cat(
    encodeEntries([entry(1, 1), entry(2, 1)]),
    encodeHardState(hs(1, 2, 1)),
    encodeEntries([entry(3, 1)]),
    encodeHardState(hs(2, 3, 3)),
  );
  const r = recover(wal, undefined, opts);
  assert.deepEqual(
    r.entries.map((e) => e.index),
    [1, 2, 3],
  );
  assert.deepEqual(r.hardState, hs(2, 3, 3));
  assert.equal(r.tornTail, false);
  assert.equal(r.walValidBytes, wal.length);
});

test('a rewritten index truncates the entries after it', () => {
  const wal = cat(
    encodeEntries([entry(1, 1), entry(2, 1), entry(3, 1)]),
    encodeEntries([entry(2, 2)]),
  );
  const r = recover(wal, undefined, opts);
  assert.deepEqual(
    r.entries.map((e) => `${e.index}/${e.term}`),
    ['1/1', '2/2'],
  );
});

test('a torn last record (zeroed tail sectors) is cut off', () => {
  const good = encodeEntries([entry(1, 1)]);
  const last = encodeEntries([entry(2, 1, 'x'.repeat(300))]);
  const torn = last.slice();
  torn.fill(0, 64); // the write reached only its first sector
  const r = recover(cat(good, torn), undefined, opts);
  assert.deepEqual(
    r.entries.map((e) => e.index),
    [1],
  );
  assert.equal(r.tornTail, true);
  assert.equal(r.walValidBytes, good.length);
});

test('a record cut short by the end of the file is a torn tail', () => {
  const good = encodeEntries([entry(1, 1)]);
  const last = encodeEntries([entry(2, 1)]);
  const r = recover(cat(good, last.subarray(0, last.length - 3)), undefined, opts);
  assert.deepEqual(
    r.entries.map((e) => e.index),
    [1],
  );
  assert.equal(r.tornTail, true);
});

test('a flipped bit before the tail refuses to start', () => {
  const a = encodeEntries([entry(1, 1, 'a'.repeat(100))]);
  const b = encodeEntries([entry(2, 1, 'b'.repeat(100))]);
  const bad = a.slice();
  bad[20] = (bad[20] as number) ^ 0x01;
  assert.throws(() => recover(cat(bad, b), undefined, opts), CorruptWalError);
});

test('the planted tornTailValid bug accepts the damaged record', () => {
  const good = encodeEntries([entry(1, 1)]);
  const last = encodeEntries([entry(2, 1, 'y'.repeat(300))]);
  const torn = last.slice();
  torn.fill(0, 128);
  const r = recover(cat(good, torn), undefined, {
    mutants: new Set(['tornTailValid'] as const),
  });
  assert.equal(r.entries.length, 2, 'the mutant keeps the torn entry');
  assert.notDeepEqual(
    r.entries[1]?.data,
    entry(2, 1, 'y'.repeat(300)).data,
    'and its data is damaged',
  );
});

test('a snapshot marker drops entries it covers; entries after the snapshot are kept', () => {
  const snap = {
    index: logIndex(2),
    term: term(1),
    conf: { voters: [nodeId(1), nodeId(2), nodeId(3)], learners: [] },
    data: enc.encode('state'),
  };
  const wal = cat(
    encodeEntries([entry(1, 1), entry(2, 1), entry(3, 1)]),
    encodeSnapshotMarker(snap.index, snap.term),
    encodeEntries([entry(4, 1)]),
  );
  const r = recover(wal, encodeSnapshot(snap), opts);
  assert.equal(r.snapshot?.index, 2);
  assert.deepEqual(
    r.entries.map((e) => e.index),
    [3, 4],
  );
});

test('a marker newer than the snapshot file ends replay: the install never completed', () => {
  // The crash kept the marker of a received snapshot (index 9) but not its file replace: the
  // snapshot file is still the old one (index 2), so the entries it would drop are kept.
  const snap = {
    index: logIndex(2),
    term: term(1),
    conf: { voters: [nodeId(1)], learners: [] },
    data: enc.encode('s'),
  };
  const wal = cat(
    encodeEntries([entry(3, 1), entry(4, 1)]),
    encodeSnapshotMarker(logIndex(9), term(2)),
    encodeHardState(hs(2, 0, 9)),
  );
  const r = recover(wal, encodeSnapshot(snap), opts);
  assert.equal(r.snapshot?.index, 2);
  assert.deepEqual(
    r.entries.map((e) => e.index),
    [3, 4],
  );
  assert.equal(r.hardState, undefined, 'nothing after the marker was promised');
});

test('entries that do not continue a newer snapshot are dropped', () => {
  // The snapshot file landed (index 5, term 3) but the WAL still holds an older history.
  const snap = {
    index: logIndex(5),
    term: term(3),
    conf: { voters: [nodeId(1)], learners: [] },
    data: enc.encode('s'),
  };
  const wal = encodeEntries([entry(4, 1), entry(5, 1), entry(6, 1)]);
  const r = recover(wal, encodeSnapshot(snap), opts);
  assert.deepEqual(r.entries, []);
});

test('a corrupt snapshot file refuses to start', () => {
  const snap = {
    index: logIndex(1),
    term: term(1),
    conf: { voters: [nodeId(1)], learners: [] },
    data: enc.encode('s'.repeat(50)),
  };
  const bytes = encodeSnapshot(snap);
  bytes[30] = (bytes[30] as number) ^ 0xff;
  assert.throws(() => recover(undefined, bytes, opts), CorruptWalError);
});

test('a flipped bit in a length field mid-log is corruption, not a torn tail', () => {
  const records = [1, 2, 3, 4].map((i) => encodeEntries([entry(i, 1, 'z'.repeat(40))]));
  const wal = cat(...records);
  const second = (records[0] as Uint8Array).length;
  wal[second + 3] = (wal[second + 3] as number) ^ 0x10; // record 2 now claims to run past the end
  assert.throws(() => recover(wal, undefined, opts), CorruptWalError);
});

test('damage followed by a record of zero-filled data is still corruption', () => {
  const a = encodeEntries([entry(1, 1, 'a'.repeat(100))]);
  const b = encodeEntries([entry(2, 1, String.fromCharCode(0).repeat(600))]);
  const bad = a.slice();
  bad[20] = (bad[20] as number) ^ 0x01;
  assert.throws(() => recover(cat(bad, b), undefined, opts), CorruptWalError);
});

test('a WAL entry at the snapshot index with another term does not continue the snapshot', () => {
  const snap = {
    index: logIndex(3),
    term: term(2),
    conf: { voters: [nodeId(1)], learners: [] },
    data: enc.encode('s'),
  };
  const wal = encodeEntries([entry(1, 1), entry(2, 1), entry(3, 3), entry(4, 3)]);
  assert.deepEqual(recover(wal, encodeSnapshot(snap), opts).entries, []);
  const same = encodeEntries([entry(3, 2), entry(4, 2)]);
  assert.deepEqual(
    recover(same, encodeSnapshot(snap), opts).entries.map((e) => e.index),
    [4],
  );
});
