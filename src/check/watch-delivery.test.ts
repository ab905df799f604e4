// The watch-delivery checker accepts legal deliveries (edge cases included) and rejects each
// planted violation with the right kind; on a large history generated from a sequential store
// and faithful watchers it accepts what was generated and catches each kind of planted mutation.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { prng, type Prng } from '../core/base/index.js';
import {
  checkWatchDelivery,
  keyInRange,
  type WatchEventRecord,
  type WatcherHistory,
  type WatchSession,
  type WatchViolationKind,
} from './watch-delivery.js';

const ev = (revision: number, key: string, type: 'put' | 'delete' = 'put'): WatchEventRecord => ({
  revision,
  key,
  type,
});
const session = (
  startRevision: number,
  events: WatchEventRecord[],
  fields: Partial<WatchSession> = {},
): WatchSession => ({
  startRevision,
  createdRevision: Math.max(0, startRevision - 1),
  events,
  end: 'open',
  ...fields,
});
const watcher = (key: string, sessions: WatchSession[], rangeEnd?: string): WatcherHistory => ({
  watcher: 1,
  key,
  ...(rangeEnd === undefined ? {} : { rangeEnd }),
  sessions,
});

// Revision 3 is a txn writing a, b and c; revision 5 a lease revoke deleting a and b.
const REFERENCE: WatchEventRecord[] = [
  ev(1, 'a'),
  ev(2, 'b'),
  ev(3, 'a'),
  ev(3, 'b'),
  ev(3, 'c'),
  ev(4, 'a'),
  ev(5, 'a', 'delete'),
  ev(5, 'b', 'delete'),
  ev(6, 'c'),
];
const on = (rev: number, key: string): WatchEventRecord =>
  REFERENCE.find((e) => e.revision === rev && e.key === key) as WatchEventRecord;
const ALL_A = [on(1, 'a'), on(3, 'a'), on(4, 'a'), on(5, 'a')];
const ALL = REFERENCE;

const kinds = (watchers: WatcherHistory[]): WatchViolationKind[] =>
  checkWatchDelivery(watchers, REFERENCE).violations.map((v) => v.kind);

void describe('keyInRange', () => {
  void it("follows etcd's range_end", () => {
    assert.ok(keyInRange('a', 'a', undefined) && !keyInRange('ab', 'a', undefined));
    assert.ok(keyInRange('b', 'a', '\u0000') && !keyInRange('0', 'a', '\u0000'));
    assert.ok(keyInRange('ab', 'a', 'b') && !keyInRange('b', 'a', 'b'));
  });
});

void describe('checkWatchDelivery accepts', () => {
  const legal: [string, WatcherHistory][] = [
    ['a single-key watch from revision 1', watcher('a', [session(1, ALL_A)])],
    ['a watch of every key', watcher('', [session(1, ALL)], '\u0000')],
    [
      'a range watch, half-open',
      watcher(
        'b',
        [
          session(
            1,
            ALL.filter((e) => e.key === 'b'),
          ),
        ],
        'c',
      ),
    ],
    [
      'startRevision 0: from the revision after creation',
      watcher('a', [session(0, [on(4, 'a'), on(5, 'a')], { createdRevision: 3 })]),
    ],
    [
      'a watch that has delivered nothing yet',
      watcher('a', [session(0, [], { createdRevision: 6 })]),
    ],
    [
      'a watcher resumed correctly after a failure',
      watcher('a', [
        session(1, [on(1, 'a'), on(3, 'a')], { end: 'failed' }),
        session(4, [on(4, 'a'), on(5, 'a')]),
      ]),
    ],
    [
      'a resume from past the last event, with nothing skipped (progress notification)',
      watcher('c', [session(1, [on(3, 'c')], { end: 'failed' }), session(5, [on(6, 'c')])]),
    ],
    [
      'a session ended by compaction, resumed at the compact revision',
      watcher('a', [
        session(1, [], { end: 'compacted', compactRevision: 4 }),
        session(4, [on(4, 'a'), on(5, 'a')]),
      ]),
    ],
    [
      'every event of a multi-event revision, in key order',
      watcher('a', [session(3, [on(3, 'a'), on(3, 'b'), on(3, 'c')])], 'd'),
    ],
  ];
  for (const [name, w] of legal) {
    void it(name, () => {
      const result = checkWatchDelivery([w], REFERENCE);
      assert.deepEqual(result.violations, []);
      assert.equal(result.ok, true);
    });
  }
});

void describe('checkWatchDelivery rejects', () => {
  void it('a watch that resumes one revision late', () => {
    const w = watcher('a', [
      session(1, [on(1, 'a')], { end: 'failed' }),
      session(4, [on(4, 'a'), on(5, 'a')]),
    ]);
    const result = checkWatchDelivery([w], REFERENCE);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['resume'],
    );
    assert.match(
      result.violations[0]?.message ?? '',
      /session 1 from revision 4: resumed at revision 4 after revision 1 was delivered, skipping 1 event \(put "a" at revision 3\)/,
    );
  });

  void it('a watch that starts one revision late (created at 2, events from 4)', () => {
    assert.deepEqual(kinds([watcher('a', [session(0, [on(4, 'a')], { createdRevision: 2 })])]), [
      'gap',
    ]);
  });

  void it('a watch that drops the first event of a multi-event revision', () => {
    const w = watcher('a', [session(3, [on(3, 'b'), on(3, 'c')])], 'd');
    const result = checkWatchDelivery([w], REFERENCE);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['gap'],
    );
    assert.match(result.violations[0]?.message ?? '', /missed 1 event \(put "a" at revision 3\)/);
  });

  void it('a watch that skips a revision', () => {
    assert.deepEqual(kinds([watcher('a', [session(1, [on(1, 'a'), on(4, 'a')])])]), ['gap']);
  });

  void it('an event delivered twice in a session', () => {
    assert.deepEqual(kinds([watcher('a', [session(1, [on(1, 'a'), on(1, 'a'), on(3, 'a')])])]), [
      'duplicate',
    ]);
  });

  void it('events out of order, across and within a revision', () => {
    assert.deepEqual(kinds([watcher('a', [session(1, [on(3, 'a'), on(1, 'a')])])]), ['order']);
    assert.deepEqual(kinds([watcher('a', [session(3, [on(3, 'b'), on(3, 'a')])], 'c')]), ['order']);
  });

  void it('an event not in the reference, or of the wrong type', () => {
    assert.deepEqual(kinds([watcher('a', [session(1, [on(1, 'a'), ev(2, 'a')])])]), ['exists']);
    assert.deepEqual(kinds([watcher('a', [session(1, [ev(1, 'a', 'delete')])])]), ['exists']);
  });

  void it('an event outside the range, or before the start revision', () => {
    assert.deepEqual(kinds([watcher('a', [session(1, [on(1, 'a'), on(2, 'b')])])]), ['exists']);
    assert.deepEqual(kinds([watcher('a', [session(3, [on(1, 'a'), on(3, 'a')])])]), ['exists']);
  });

  void it('a resume that starts early and re-delivers, saying which event', () => {
    const w = watcher('a', [
      session(1, [on(1, 'a'), on(3, 'a')], { end: 'failed' }),
      session(3, [on(3, 'a'), on(4, 'a')]),
    ]);
    const result = checkWatchDelivery([w], REFERENCE);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['resume'],
    );
    assert.match(result.violations[0]?.message ?? '', /put "a" at revision 3 re-delivered/);
  });
});

// A sequential store of six keys, one txn of one to three keys per revision (keys in order, as
// etcd emits a txn's events), and watchers of one key, a range, or every key from one on, each
// delivering every event of its range from its start and resuming, after a failure, from the
// revision after the last one it delivered. Some sessions are ended by compaction at once and
// resumed at the compact revision.
const KEYS = ['a', 'b', 'c', 'd', 'e', 'f'];
const REVISIONS = 800;
const WATCHERS = 40;
const EVENTS_MIN = 2_000;

function referenceOf(r: Prng): WatchEventRecord[] {
  const events: WatchEventRecord[] = [];
  for (let revision = 1; revision <= REVISIONS; revision++) {
    const keys = KEYS.filter(() => r.chance(0.3));
    if (keys.length === 0) keys.push(r.pick(KEYS));
    for (const key of keys) events.push({ revision, key, type: r.chance(0.2) ? 'delete' : 'put' });
  }
  return events;
}

function watchersOf(r: Prng, reference: readonly WatchEventRecord[]): WatcherHistory[] {
  const watchers: WatcherHistory[] = [];
  for (let id = 0; id < WATCHERS; id++) {
    const from = r.pick(KEYS);
    const rangeEnd = r.pick([undefined, '\u0000', KEYS[KEYS.indexOf(from) + 2] ?? '\u0000']);
    const inRange = (key: string): boolean => keyInRange(key, from, rangeEnd);
    const sessions: WatchSession[] = [];
    let next = r.int(1, REVISIONS / 4);
    while (next <= REVISIONS) {
      if (r.chance(0.1)) {
        const compactRevision = next + r.int(1, 30);
        sessions.push({
          startRevision: next,
          createdRevision: next - 1,
          events: [],
          end: 'compacted',
          compactRevision,
        });
        next = compactRevision;
        continue;
      }
      const until = r.chance(0.3) ? REVISIONS : next + r.int(20, 200);
      const events = reference.filter(
        (e) => e.revision >= next && e.revision <= until && inRange(e.key),
      );
      const last = events[events.length - 1];
      const open = until >= REVISIONS;
      // A watch from "now" (startRevision 0) when it begins where the store is.
      const fromNow = sessions.length === 0 && r.chance(0.3);
      sessions.push({
        startRevision: fromNow ? 0 : next,
        createdRevision: next - 1,
        events,
        end: open ? 'open' : r.pick(['failed', 'canceled'] as const),
      });
      if (open) break;
      next = (last?.revision ?? until) + 1;
    }
    watchers.push({
      watcher: id,
      key: from,
      ...(rangeEnd === undefined ? {} : { rangeEnd }),
      sessions,
    });
  }
  return watchers;
}

type Mutation = 'gap' | 'duplicate' | 'order' | 'exists' | 'resume';
const MUTATIONS: readonly Mutation[] = ['gap', 'duplicate', 'order', 'exists', 'resume'];

/** A session with at least three events that is not the last of its watcher. */
function pickSession(r: Prng, watchers: readonly WatcherHistory[]): [number, number] {
  const candidates: [number, number][] = [];
  watchers.forEach((w, i) =>
    w.sessions.forEach((s, j) => {
      if (s.events.length >= 3 && j < w.sessions.length - 1) candidates.push([i, j]);
    }),
  );
  return r.pick(candidates);
}

function mutate(r: Prng, watchers: WatcherHistory[], mutation: Mutation): WatcherHistory[] {
  const [i, j] = pickSession(r, watchers);
  const w = watchers[i] as WatcherHistory;
  const s = w.sessions[j] as WatchSession;
  const events = [...s.events];
  const sessions = [...w.sessions];
  const k = r.int(0, events.length - 1);
  switch (mutation) {
    case 'gap':
      events.splice(k, 1);
      break;
    case 'duplicate':
      events.splice(k, 0, events[k] as WatchEventRecord);
      break;
    case 'order':
      [events[k], events[k + 1]] = [
        events[k + 1] as WatchEventRecord,
        events[k] as WatchEventRecord,
      ];
      break;
    case 'exists': {
      const e = events[k] as WatchEventRecord;
      events[k] = { ...e, type: e.type === 'put' ? 'delete' : 'put' };
      break;
    }
    case 'resume': {
      // The session's last event is lost and the next session resumes after it.
      const lost = events.pop() as WatchEventRecord;
      const after = sessions[j + 1] as WatchSession;
      sessions[j + 1] = {
        ...after,
        startRevision: Math.max(after.startRevision, lost.revision + 1),
      };
      break;
    }
  }
  sessions[j] = { ...s, events };
  const out = [...watchers];
  out[i] = { ...w, sessions };
  return out;
}

void describe('checkWatchDelivery on a generated history', () => {
  const SEEDS = 15;

  void it(`accepts it as generated (at least ${EVENTS_MIN} delivered events)`, () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const r = prng(seed);
      const reference = referenceOf(r);
      const watchers = watchersOf(r, reference);
      const result = checkWatchDelivery(watchers, reference);
      assert.ok(result.eventsChecked >= EVENTS_MIN, `${result.eventsChecked} events`);
      assert.deepEqual(
        result.violations.map((v) => v.message),
        [],
        `seed ${seed}`,
      );
    }
  });

  void it('rejects it with one planted mutation of each kind, reported as that kind', () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const r = prng(seed);
      const reference = referenceOf(r);
      const watchers = watchersOf(r, reference);
      const mutation = MUTATIONS[seed % MUTATIONS.length] as Mutation;
      const result = checkWatchDelivery(mutate(prng(900 + seed), watchers, mutation), reference);
      assert.ok(
        result.violations.some((v) => v.kind === mutation),
        `seed ${seed}: ${mutation} reported as ${result.violations.map((v) => v.message).join('; ')}`,
      );
    }
  });
});
