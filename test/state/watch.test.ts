// The watch hub (etcd's server/etcdserver/api/v3rpc/watch.go and
// server/storage/mvcc/watchable_store.go): creation responses and refusals, events per revision
// with filters and prev_kv, replay from a past start revision, compacted watchers, cancel,
// progress.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_ETCD_LIMITS } from '../../src/core/state/etcd-limits.js';
import type { WatchResponse } from '../../src/core/state/watch-hub.js';
import { b, eventView, Harness, ok, putOp, delOp } from './fixtures.js';

const describe = (r: WatchResponse): string => {
  const flags = [
    r.created ? 'created' : '',
    r.canceled ? 'canceled' : '',
    r.compactRevision ? `compact=${r.compactRevision}` : '',
    r.cancelReason ? `reason="${r.cancelReason}"` : '',
  ].filter((x) => x !== '');
  const head = `#${r.watchId} h${r.header.revision}${flags.length ? ' ' + flags.join(' ') : ''}`;
  return [head, ...r.events.map((e) => '  ' + eventView(e))].join('\n');
};

void test('create from now: created response, then one response per revision', () => {
  const h = new Harness();
  h.put('a', '0'); // 2
  const hub = h.m.openWatchHub();
  assert.equal(hub.create({ key: b('a'), rangeEnd: b('c') }), 0);
  assert.equal(hub.create({ key: b('b') }), 1);
  h.put('a', '1'); // 3
  h.put('b', '1'); // 4
  h.put('c', '1'); // 5: outside both
  ok(h.txn({ compare: [], success: [putOp('a', '2'), delOp('b')], failure: [] }), 'txn'); // 6
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h2 created',
    '#1 h2 created',
    '#0 h3\n  PUT a=1 m3 v2',
    '#0 h4\n  PUT b=1 m4 v1',
    '#1 h4\n  PUT b=1 m4 v1',
    '#0 h6\n  PUT a=2 m6 v3\n  DELETE b= m6 v0',
    '#1 h6\n  DELETE b= m6 v0',
  ]);
});

void test('prev_kv and the NOPUT / NODELETE filters', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  hub.create({ key: b('k'), prevKv: true });
  hub.create({ key: b('k'), filters: ['NOPUT'] });
  hub.create({ key: b('k'), filters: ['NODELETE'] });
  hub.drain();
  h.put('k', '1'); // 2
  h.put('k', '2'); // 3
  h.del('k'); // 4
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h2\n  PUT k=1 m2 v1',
    '#2 h2\n  PUT k=1 m2 v1',
    '#0 h3\n  PUT k=2 m3 v2 prev=1@2',
    '#2 h3\n  PUT k=2 m3 v2',
    '#0 h4\n  DELETE k= m4 v0 prev=2@3',
    '#1 h4\n  DELETE k= m4 v0',
  ]);
});

void test('a past start revision replays history inclusively, then continues live', () => {
  const h = new Harness();
  h.put('a', '1'); // 2
  h.put('a', '2'); // 3
  h.del('a'); // 4
  h.put('a', '3'); // 5
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), startRevision: 3, prevKv: true });
  h.put('a', '4'); // 6
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h5 created',
    '#0 h5\n  PUT a=2 m3 v2 prev=1@2\n  DELETE a= m4 v0 prev=2@3\n  PUT a=3 m5 v1',
    '#0 h6\n  PUT a=4 m6 v2 prev=3@5',
  ]);
});

void test('a future start revision waits for it', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), startRevision: 4 });
  h.put('a', '1'); // 2
  h.put('a', '2'); // 3
  h.put('a', '3'); // 4
  assert.deepEqual(hub.drain().map(describe), ['#0 h1 created', '#0 h4\n  PUT a=3 m4 v3']);
});

void test('catch-up responses hold at most the configured number of revisions', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, watchCatchUpRevisionsMax: 2 });
  for (let i = 0; i < 5; i++) h.put('a', `${i}`); // 2..6
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), startRevision: 2 });
  assert.deepEqual(
    hub.drain().map((r) => r.events.map((e) => e.kv.modRevision).join(',')),
    ['', '2,3', '4,5', '6'],
  );
});

void test('a start revision below the compact revision gets the compacted response', () => {
  const h = new Harness();
  h.put('a', '1'); // 2
  h.put('a', '2'); // 3
  h.put('a', '3'); // 4
  ok(h.compact(3), 'compact');
  const hub = h.m.openWatchHub();
  assert.equal(hub.create({ key: b('a'), startRevision: 2 }), 0);
  assert.equal(hub.size, 0);
  assert.equal(hub.create({ key: b('a'), startRevision: 3 }), 1, 'IDs are not reused');
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h4 created',
    '#0 h4 canceled compact=3',
    '#1 h4 created',
    '#1 h4\n  PUT a=2 m3 v2\n  PUT a=3 m4 v3',
  ]);
});

void test('refused creates: negative start, empty range, duplicate ID', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  assert.equal(hub.create({ key: b('a'), startRevision: -1 }), -1);
  assert.equal(hub.create({ key: b('b'), rangeEnd: b('a') }), -1);
  assert.equal(hub.create({ key: b('a'), watchId: 7 }), 7);
  assert.equal(hub.create({ key: b('a'), watchId: 7 }), -1);
  assert.deepEqual(hub.drain().map(describe), [
    '#-1 h1 created canceled reason="etcdserver: mvcc: required revision has been compacted"',
    '#-1 h1 created canceled reason="mvcc: watcher range is empty"',
    '#7 h1 created',
    '#-1 h1 created canceled reason="mvcc: duplicate watch ID provided on the WatchStream"',
  ]);
});

void test('automatic IDs start at 0 and skip IDs in use; empty key means "\\0"', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  hub.create({ key: b('x'), watchId: 1 });
  assert.equal(hub.create({ key: b('x') }), 0);
  assert.equal(hub.create({ key: b('x') }), 2);
  assert.equal(hub.create({ key: new Uint8Array(), rangeEnd: new Uint8Array([0]) }), 3);
  hub.drain();
  h.put('anything', '1');
  assert.deepEqual(
    hub.drain().map((r) => r.watchId),
    [3],
  );
});

void test('cancel answers known IDs only and stops events', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a') });
  hub.drain();
  assert.equal(hub.cancel(0), true);
  assert.equal(hub.cancel(0), false);
  assert.equal(hub.cancel(42), false);
  h.put('a', '1');
  assert.deepEqual(hub.drain().map(describe), ['#0 h1 canceled']);
  h.m.closeWatchHub(hub);
});

void test('progress: on request, and periodic for idle progress_notify watchers', () => {
  const h = new Harness();
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), progressNotify: true });
  hub.create({ key: b('b'), progressNotify: true });
  hub.create({ key: b('c') });
  hub.drain();
  h.put('a', '1'); // 2
  h.put('z', '1'); // 3
  hub.progressTick();
  hub.requestProgress();
  assert.deepEqual(hub.drain().map(describe), ['#0 h2\n  PUT a=1 m2 v1', '#1 h3', '#-1 h3']);
  hub.progressTick();
  assert.deepEqual(hub.drain().map(describe), ['#0 h3', '#1 h3']);
});

void test('a hub resyncs after a snapshot restore moves the store forward', () => {
  const leader = new Harness();
  const follower = new Harness();
  const hub = follower.m.openWatchHub();
  hub.create({ key: b('k'), rangeEnd: b('l') });
  hub.drain();
  leader.put('k1', 'a'); // 2
  leader.put('k2', 'b'); // 3
  follower.m.restore(leader.m.snapshot());
  assert.deepEqual(hub.drain().map(describe), ['#0 h3\n  PUT k1=a m2 v1\n  PUT k2=b m3 v1']);
  // If the snapshot's history is compacted past the watcher, it is cancelled as compacted.
  const f2 = new Harness();
  const hub2 = f2.m.openWatchHub();
  hub2.create({ key: b('k') });
  hub2.drain();
  ok(leader.compact(3), 'compact');
  f2.m.restore(leader.m.snapshot());
  assert.deepEqual(hub2.drain().map(describe), ['#0 h3 canceled compact=3']);
});

void test('a slow stream: live events stop at the queue limit and are caught up at drain', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, watchQueueResponsesMax: 2 });
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), progressNotify: true }); // 1 queued: created
  h.put('a', '1'); // 2: queued live (2 queued)
  h.put('a', '2'); // 3: queue full, watcher falls behind
  h.put('a', '3'); // 4
  assert.equal(hub.requestProgress(), false, 'dropped while a watcher is behind');
  hub.progressTick();
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h1 created',
    '#0 h2\n  PUT a=1 m2 v1',
    '#0 h4\n  PUT a=2 m3 v2\n  PUT a=3 m4 v3',
  ]);
  assert.equal(hub.requestProgress(), true);
  assert.deepEqual(hub.drain().map(describe), ['#-1 h4']);
});

void test('a slow stream: live events also stop at the byte limit, and queuedBytes counts', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, watchQueueBytesMax: 10 });
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a'), prevKv: true });
  h.put('a', '12345'); // 2: queued, 6 bytes
  assert.equal(hub.queuedBytes, 6);
  h.put('a', '67890'); // 3: queued, 12 bytes with its prev_kv: the limit is passed
  assert.equal(hub.queuedBytes, 18);
  h.put('a', 'x'); // 4: not queued: the watcher falls behind
  assert.equal(hub.queuedBytes, 18);
  assert.deepEqual(hub.drain().map(describe), [
    '#0 h1 created',
    '#0 h2\n  PUT a=12345 m2 v1',
    '#0 h3\n  PUT a=67890 m3 v2 prev=12345@2',
    '#0 h4\n  PUT a=x m4 v3 prev=67890@3',
  ]);
  assert.equal(hub.queuedBytes, 0);
  // openWatchHub's own limit replaces the machine's.
  const roomy = h.m.openWatchHub(1024);
  roomy.create({ key: b('a') });
  h.put('a', '1'); // 5
  h.put('a', '2'); // 6
  assert.equal(roomy.drain().length, 3);
});

void test('a slow watcher whose history is compacted meanwhile is cancelled', () => {
  const h = new Harness({ ...DEFAULT_ETCD_LIMITS, watchQueueResponsesMax: 1 });
  const hub = h.m.openWatchHub();
  hub.create({ key: b('a') }); // queue full with the created response
  h.put('a', '1'); // 2, missed
  h.put('a', '2'); // 3, missed
  ok(h.compact(3), 'compact');
  assert.deepEqual(hub.drain().map(describe), ['#0 h1 created', '#0 h3 canceled compact=3']);
  assert.equal(hub.size, 0);
});
