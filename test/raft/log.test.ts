// Table tests for the replicated log (src/core/raft/log.ts): conflict search, fast-backtracking
// hints, truncating appends, the election restriction and compaction (Raft §5.3, §5.4.1, §7).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AssertionError } from '../../src/core/base/assert.js';
import { logIndex, term } from '../../src/core/base/units.js';
import { RaftLog } from '../../src/core/raft/log.js';
import type { Entry, Snapshot } from '../../src/core/raft/types.js';

/** Entries from "index/term" strings. */
function ents(...xs: string[]): Entry[] {
  return xs.map((x) => {
    const [i, t] = x.split('/').map(Number);
    return { index: logIndex(i ?? 0), term: term(t ?? 0), type: 'normal', data: new Uint8Array(0) };
  });
}

function positions(log: RaftLog): string[] {
  if (log.lastIndex() < log.firstIndex()) return [];
  return log.slice(log.firstIndex(), log.lastIndex()).map((e) => `${e.index}/${e.term}`);
}

function snap(index: number, t: number): Snapshot {
  return {
    index: logIndex(index),
    term: term(t),
    conf: { voters: [], learners: [] },
    data: new Uint8Array(0),
  };
}

void test('findConflict: the first entry we lack or hold with another term', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/2'), logIndex(0));
  const cases: { name: string; ents: Entry[]; want: number }[] = [
    { name: 'nothing to compare', ents: [], want: 0 },
    { name: 'all held', ents: ents('1/1', '2/1'), want: 0 },
    { name: 'new entries after ours', ents: ents('2/1', '3/2', '4/2'), want: 4 },
    { name: 'term mismatch', ents: ents('2/1', '3/3'), want: 3 },
    { name: 'mismatch at the first', ents: ents('1/2'), want: 1 },
  ];
  for (const c of cases) assert.equal(log.findConflict(c.ents), c.want, c.name);
});

void test('findConflictByTerm: the last index at or below `index` with a term <= t', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/2', '4/2', '5/3'), logIndex(0));
  const compacted = new RaftLog(snap(2, 1), ents('3/2', '4/2', '5/3'), logIndex(2));
  const cases: { name: string; log: RaftLog; index: number; t: number; want: number }[] = [
    { name: 'term matches at index', log, index: 5, t: 3, want: 5 },
    { name: 'skip the term-3 entry', log, index: 5, t: 2, want: 4 },
    { name: 'skip terms 3 and 2', log, index: 5, t: 1, want: 2 },
    { name: 'no entry old enough', log, index: 5, t: 0, want: 0 },
    { name: 'index beyond the log is clamped', log, index: 10, t: 2, want: 4 },
    { name: 'higher term than any', log, index: 3, t: 9, want: 3 },
    { name: 'stops at the snapshot', log: compacted, index: 5, t: 1, want: 2 },
  ];
  for (const c of cases) {
    assert.equal(c.log.findConflictByTerm(logIndex(c.index), term(c.t)), c.want, c.name);
  }
});

void test('appendAt: truncates only from the first conflict', () => {
  const cases: {
    name: string;
    log: string[];
    committed: number;
    append: string[];
    truncateAlways?: boolean;
    want: string[];
    unstable: string[];
  }[] = [
    {
      name: 'conflicting suffix replaced',
      log: ['1/1', '2/1', '3/1'],
      committed: 1,
      append: ['2/1', '3/2', '4/2'],
      want: ['1/1', '2/1', '3/2', '4/2'],
      unstable: ['3/2', '4/2'],
    },
    {
      name: 'stale append of held entries changes nothing',
      log: ['1/1', '2/1', '3/1', '4/1'],
      committed: 1,
      append: ['2/1', '3/1'],
      want: ['1/1', '2/1', '3/1', '4/1'],
      unstable: [],
    },
    {
      name: 'extends the log',
      log: ['1/1'],
      committed: 1,
      append: ['2/1', '3/1'],
      want: ['1/1', '2/1', '3/1'],
      unstable: ['2/1', '3/1'],
    },
    {
      name: 'the truncateOnStaleAppend mutant cuts the held suffix',
      log: ['1/1', '2/1', '3/1', '4/1'],
      committed: 1,
      append: ['2/1', '3/1'],
      truncateAlways: true,
      want: ['1/1', '2/1', '3/1'],
      unstable: ['2/1', '3/1'],
    },
  ];
  for (const c of cases) {
    const log = new RaftLog(undefined, ents(...c.log), logIndex(c.committed));
    log.appendAt(ents(...c.append), c.truncateAlways ?? false);
    assert.deepEqual(positions(log), c.want, c.name);
    assert.deepEqual(
      log.unstable().map((e) => `${e.index}/${e.term}`),
      c.unstable,
      `${c.name}: unstable`,
    );
  }
});

void test('appendAt: truncating a committed entry is a bug and asserts', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/1'), logIndex(3));
  assert.throws(() => log.appendAt(ents('3/2'), false), AssertionError);
});

void test('isUpToDate: last term first, then length (Raft §5.4.1)', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/2'), logIndex(0));
  const cases: { name: string; index: number; t: number; indexOnly?: boolean; want: boolean }[] = [
    { name: 'identical', index: 3, t: 2, want: true },
    { name: 'same term, shorter', index: 2, t: 2, want: false },
    { name: 'same term, longer', index: 4, t: 2, want: true },
    { name: 'higher term, shorter', index: 1, t: 3, want: true },
    { name: 'lower term, longer', index: 10, t: 1, want: false },
    {
      name: 'voteIndexOnly mutant: lower term, longer',
      index: 10,
      t: 1,
      indexOnly: true,
      want: true,
    },
    { name: 'empty candidate log', index: 0, t: 0, want: false },
  ];
  for (const c of cases) {
    assert.equal(
      log.isUpToDate(logIndex(c.index), term(c.t), c.indexOnly ?? false),
      c.want,
      c.name,
    );
  }
});

void test('compact: drops applied entries, keeps the term at the cut', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/2', '4/2', '5/2'), logIndex(5));
  log.appliedTo(logIndex(4));
  log.compact(logIndex(3));
  assert.deepEqual([log.snapshotIndex, log.snapshotTerm, log.firstIndex()], [3, 2, 4]);
  assert.equal(log.term(logIndex(3)), 2, 'the term at the snapshot index stays known');
  assert.equal(log.term(logIndex(2)), undefined, 'below the snapshot is gone');
  assert.equal(log.entry(logIndex(3)), undefined);
  assert.deepEqual(positions(log), ['4/2', '5/2']);
  log.compact(logIndex(2));
  assert.equal(log.snapshotIndex, 3, 'compacting below the snapshot is a no-op');
  assert.throws(() => log.compact(logIndex(5)), AssertionError, 'beyond applied');
});

void test('restart: entries covered by the snapshot are skipped, commit is clamped', () => {
  const log = new RaftLog(snap(2, 1), ents('1/1', '2/1', '3/1', '4/2'), logIndex(9));
  assert.deepEqual(positions(log), ['3/1', '4/2']);
  assert.deepEqual([log.committed, log.applied, log.persisted], [4, 2, 4]);
  const bare = new RaftLog(undefined, ents('1/1'), logIndex(0));
  assert.equal(bare.committed, 0);
});

void test('restore: a snapshot from the leader replaces the whole log', () => {
  const log = new RaftLog(undefined, ents('1/1', '2/1', '3/1'), logIndex(1));
  const s = snap(10, 3);
  log.restore(s);
  assert.deepEqual(
    [log.lastIndex(), log.lastTerm(), log.committed, log.persisted],
    [10, 3, 10, 10],
  );
  assert.equal(log.pendingSnapshot, s);
  assert.deepEqual(positions(log), []);
});
