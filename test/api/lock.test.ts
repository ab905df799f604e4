// The Lock service (etcd's server/etcdserver/api/v3lock/lock.go, on the recipe in
// client/v3/concurrency/mutex.go) called through its handlers over a MemoryBackend: FIFO mutual
// exclusion by create revision, only the predecessor's deletion wakes a waiter, lease expiry (by
// the injected clock and the backend's expiry pass) releases a lock and ends a waiter's queueing,
// cancellation withdraws the waiter's key, and etcd's key layout and headers.
// No test sleeps: `settle()` only lets the promise chains of the in-memory backend run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import type { Mutants } from '../../src/core/base/mutants.js';
import type { Command } from '../../src/core/state/command.js';
import type { EtcdResult } from '../../src/core/state/etcd-machine.js';
import type { KeyValue, LeaseId } from '../../src/core/state/kv-types.js';
import { ERR_UNLOCK_KEY_NEWER } from '../../src/core/state/etcd-errors.js';
import type { ProtoHeader } from '../../src/server/api/convert.js';
import { statusOf } from '../../src/server/api/convert.js';
import { lockHandlers } from '../../src/server/api/lock.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A MemoryBackend on a fake clock that counts linearizable reads and open watch hubs. */
class TestBackend extends MemoryBackend {
  readonly fakeClock: { nowMs: number };
  reads = 0;
  openHubs = 0;

  constructor() {
    const fakeClock = { nowMs: 0 };
    super({ nowMs: () => fakeClock.nowMs });
    this.fakeClock = fakeClock;
    const m = this.machine;
    const open = m.openWatchHub.bind(m);
    const close = m.closeWatchHub.bind(m);
    m.openWatchHub = () => {
      this.openHubs++;
      return open();
    };
    m.closeWatchHub = (hub) => {
      this.openHubs--;
      close(hub);
    };
  }

  override readBarrier(signal?: AbortSignal): Promise<void> {
    this.reads++;
    return super.readBarrier(signal);
  }

  /** When set, the next proposal waits until `release()`: a frame held in a cut peer link. */
  holdNext = false;
  private held: (() => void) | undefined;

  override propose(cmd: Command, signal?: AbortSignal): Promise<EtcdResult> {
    if (!this.holdNext) return super.propose(cmd, signal);
    this.holdNext = false;
    return new Promise<void>((resolve) => (this.held = resolve)).then(() =>
      super.propose(cmd, signal),
    );
  }

  /** When set, what knownCommittedRevision answers: a member that lags behind the grant. */
  knownRevisionOverride: number | undefined;

  override knownCommittedRevision(signal?: AbortSignal): Promise<number> {
    if (this.knownRevisionOverride === undefined) return super.knownCommittedRevision(signal);
    return Promise.resolve(this.knownRevisionOverride);
  }

  release(): void {
    assert.ok(this.held, 'no proposal is held');
    this.held();
    this.held = undefined;
  }

  async grant(ttlSeconds: number): Promise<LeaseId> {
    const r = await this.propose({ type: 'leaseGrant', id: 0n, ttlSeconds, nowMs: 0 });
    assert.equal(r.type, 'leaseGrant');
    return r.type === 'leaseGrant' ? r.response.id : 0n;
  }

  get(key: string | Uint8Array): KeyValue | undefined {
    const r = this.machine.range({ key: typeof key === 'string' ? enc.encode(key) : key });
    assert.ok('kvs' in r);
    return r.kvs[0];
  }

  /** Let every pending promise chain run (the backend has no timers). */
  async settle(): Promise<void> {
    for (let i = 0; i < 3; i++) await turn();
  }
}

interface LockReply {
  readonly header: ProtoHeader;
  readonly key: Buffer;
}

interface Tracked<T> {
  done: boolean;
  value?: T;
  error?: unknown;
}

function track<T>(p: Promise<T>): Tracked<T> {
  const t: Tracked<T> = { done: false };
  p.then(
    (value) => Object.assign(t, { done: true, value }),
    (error: unknown) => Object.assign(t, { done: true, error }),
  );
  return t;
}

function callInfo(signal: AbortSignal = new AbortController().signal) {
  return { signal, metadata: new Map<string, string>() };
}

function service(backend: TestBackend, mutants?: Mutants) {
  const h = lockHandlers(backend, mutants).unary;
  const lockFn = h['/v3lockpb.Lock/Lock'];
  const unlockFn = h['/v3lockpb.Lock/Unlock'];
  assert.ok(lockFn && unlockFn);
  return {
    lock: (name: string, lease: LeaseId, signal?: AbortSignal) =>
      lockFn(
        { name: Buffer.from(name), lease: lease.toString() },
        callInfo(signal),
      ) as Promise<LockReply>,
    unlock: (key: Uint8Array) =>
      unlockFn({ key: Buffer.from(key) }, callInfo()) as Promise<{ header: ProtoHeader }>,
  };
}

function assertStatus(error: unknown, code: string, message: string): void {
  assert.deepEqual(statusOf(error), { code, message });
}

test('an uncontended lock: key name/hex(lease), header at its create revision', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const lease = await b.grant(10);
  const r = await lock('job', lease);
  assert.equal(dec.decode(r.key), `job/${lease.toString(16)}`);
  const kv = b.get(r.key);
  assert.ok(kv);
  assert.equal(kv.lease, lease);
  assert.equal(kv.value.length, 0);
  assert.equal(r.header.revision, String(kv.createRevision));
  assert.equal(r.header.cluster_id, b.clusterId.toString());
  assert.equal(b.openHubs, 0);
});

test('waiters acquire one at a time in create-revision order', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const leases = [await b.grant(60), await b.grant(60), await b.grant(60), await b.grant(60)];
  const calls = leases.map((l) => track(lock('q', l)));
  await b.settle();
  assert.deepEqual(
    calls.map((c) => c.done),
    [true, false, false, false],
  );
  for (let i = 1; i < calls.length; i++) {
    const holder = calls[i - 1]?.value;
    assert.ok(holder);
    const released = await unlock(holder.key);
    await b.settle();
    assert.deepEqual(
      calls.map((c) => c.done),
      calls.map((_, j) => j <= i),
    );
    const got = calls[i]?.value;
    assert.ok(got);
    assert.equal(dec.decode(got.key), `q/${leases[i]?.toString(16)}`);
    // Contended: the header is that of the read that found the turn, i.e. the release.
    assert.equal(got.header.revision, released.header.revision);
  }
  assert.equal(b.openHubs, 0);
});

test('a release wakes only the next waiter (no thundering herd)', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const leases: LeaseId[] = [];
  for (let i = 0; i < 21; i++) leases.push(await b.grant(60));
  const calls = leases.map((l) => track(lock('herd', l)));
  await b.settle();
  assert.equal(calls.filter((c) => c.done).length, 1);
  // Each of the 20 waiters watches two keys (predecessor and its own) in a hub of its own.
  assert.equal(b.openHubs, 20);

  const before = b.reads;
  const holder = calls[0]?.value;
  assert.ok(holder);
  await unlock(holder.key);
  await b.settle();
  assert.deepEqual(
    calls.map((c) => c.done),
    calls.map((_, i) => i <= 1),
  );
  assert.equal(b.reads - before, 1, 'only the woken waiter reads again');

  // Deleting a waiter's key in the middle wakes that waiter (its session is gone) and its
  // successor, which then queues behind the removed waiter's predecessor; nobody else.
  const middle = enc.encode(`herd/${leases[10]?.toString(16)}`);
  const beforeMiddle = b.reads;
  await unlock(middle);
  await b.settle();
  assert.equal(b.reads - beforeMiddle, 2);
  assert.deepEqual(
    calls.map((c, i) => (c.done ? i : -1)).filter((i) => i >= 0),
    [0, 1, 10],
  );
  assertStatus(calls[10]?.error, 'Unknown', 'mutex: session is expired');
  assert.equal(b.openHubs, 18);
});

test('an expired holder lease releases the lock to the next waiter', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const holderLease = await b.grant(5);
  const waiterLease = await b.grant(60);
  const holder = await lock('exp', holderLease);
  const waiter = track(lock('exp', waiterLease));
  await b.settle();
  assert.equal(waiter.done, false);

  b.fakeClock.nowMs += 4_000;
  await b.expireLeases();
  await b.settle();
  assert.equal(waiter.done, false, 'not before the TTL');

  b.fakeClock.nowMs += 2_000;
  await b.expireLeases();
  await b.settle();
  assert.equal(b.get(holder.key), undefined);
  assert.ok(waiter.value, String(waiter.error));
  assert.equal(waiter.value.header.revision, String(b.machine.revision));
  assert.equal(b.openHubs, 0);
});

test('a waiter whose lease expires while queued gets "mutex: session is expired" at once', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const holder = await lock('ses', await b.grant(60));
  const doomed = track(lock('ses', await b.grant(5)));
  const third = track(lock('ses', await b.grant(60)));
  await b.settle();

  b.fakeClock.nowMs += 6_000;
  await b.expireLeases();
  await b.settle();
  // etcd would keep the doomed waiter queued until the holder goes (etcd#19597).
  assert.equal(doomed.done, true);
  assertStatus(doomed.error, 'Unknown', 'mutex: session is expired');
  assert.equal(third.done, false, 'the holder still holds');

  await unlock(holder.key);
  await b.settle();
  assert.ok(third.value, String(third.error));
  assert.equal(b.openHubs, 0);
});

test('a waiter whose key is gone when its turn comes is refused, never granted', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const holder = await lock('gone', await b.grant(60));
  const lease = await b.grant(60);
  const waiter = track(lock('gone', lease));
  await b.settle();
  // The holder's and the waiter's keys go in one txn: the waiter must not win without a key.
  await b.propose({
    type: 'txn',
    request: {
      compare: [],
      success: [
        { type: 'deleteRange', request: { key: holder.key } },
        { type: 'deleteRange', request: { key: enc.encode(`gone/${lease.toString(16)}`) } },
      ],
      failure: [],
    },
  });
  await b.settle();
  assertStatus(waiter.error, 'Unknown', 'mutex: session is expired');
});

test('a cancelled Lock withdraws its key and the queue closes up behind it', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const holder = await lock('c', await b.grant(60));
  const ac = new AbortController();
  const lease = await b.grant(60);
  const cancelled = track(lock('c', lease, ac.signal));
  const next = track(lock('c', await b.grant(60)));
  await b.settle();
  assert.ok(b.get(`c/${lease.toString(16)}`));

  ac.abort();
  await b.settle();
  assertStatus(cancelled.error, 'Canceled', 'etcdserver: request canceled');
  assert.equal(b.get(`c/${lease.toString(16)}`), undefined);
  assert.equal(next.done, false);

  await unlock(holder.key);
  await b.settle();
  assert.ok(next.value, String(next.error));
  assert.equal(b.openHubs, 0);
});

test('locking twice with one lease reuses the key', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const lease = await b.grant(60);
  const first = await lock('twice', lease);
  await b.propose({ type: 'put', request: { key: enc.encode('other'), value: enc.encode('x') } });
  const second = await lock('twice', lease);
  assert.deepEqual(second.key, first.key);
  // The key was not rewritten; the header is the (read-only) txn's, i.e. now.
  assert.equal(b.get(first.key)?.createRevision, Number(first.header.revision));
  assert.equal(second.header.revision, String(b.machine.revision));
  const u = await unlock(second.key);
  assert.equal(u.header.revision, String(b.machine.revision));
  assert.equal(b.get(first.key), undefined);
});

test('lease 0 queues under a fresh, unattended 60 s lease', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const r = await lock('zero', 0n);
  const kv = b.get(r.key);
  assert.ok(kv);
  assert.notEqual(kv.lease, 0n);
  assert.equal(dec.decode(r.key), `zero/${kv.lease.toString(16)}`);
  assert.equal(b.machine.leaseTimeToLive(kv.lease, b.fakeClock.nowMs, false).grantedTtlSeconds, 60);
  b.fakeClock.nowMs += 61_000;
  await b.expireLeases();
  assert.equal(b.get(r.key), undefined);
});

test('a lease that does not exist: "etcdserver: requested lease not found", nothing written', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const rev = b.machine.revision;
  await assert.rejects(lock('nl', 0x1234n), (e) => {
    assertStatus(e, 'NotFound', 'etcdserver: requested lease not found');
    return true;
  });
  assert.equal(b.machine.revision, rev);
});

test('a key written by a Go concurrency.Mutex on the same name is waited for', async () => {
  const b = new TestBackend();
  const { lock } = service(b);
  const goLease = await b.grant(60);
  const goKey = enc.encode(`shared/${goLease.toString(16)}`);
  await b.propose({
    type: 'put',
    request: { key: goKey, value: new Uint8Array(0), lease: goLease },
  });
  const ours = track(lock('shared', await b.grant(60)));
  await b.settle();
  assert.equal(ours.done, false);
  await b.propose({ type: 'deleteRange', request: { key: goKey } });
  await b.settle();
  assert.ok(ours.value, String(ours.error));
});

test('Unlock is a plain delete of the key, even of a key that is not held', async () => {
  const b = new TestBackend();
  const { unlock } = service(b);
  const rev = b.machine.revision;
  const r = await unlock(enc.encode('nothing/1'));
  assert.equal(r.header.revision, String(rev));
});

for (const unfenced of [false, true]) {
  const what = unfenced
    ? 'with the unlockUnfenced mutant (a plain delete, as before the fix) it does'
    : 'it does not, and tells its sender to retry';
  test(`a late Unlock and the holder's next key under the same lease: ${what} delete it`, async () => {
    const b = new TestBackend();
    const { lock, unlock } = service(b, unfenced ? new Set(['unlockUnfenced']) : undefined);
    const lease = await b.grant(60);
    const first = await lock('late', lease);
    // The Unlock is taken in, and its proposal waits (in a cut peer link, say) ...
    b.holdNext = true;
    const late = track(unlock(first.key));
    await b.settle();
    assert.equal(late.done, false);
    // ... while its client, told nothing definite, unlocks elsewhere and locks again with the
    // same lease, hence the same key name.
    await b.propose({ type: 'deleteRange', request: { key: first.key } });
    const again = await lock('late', lease);
    assert.deepEqual(again.key, first.key);
    b.release();
    await b.settle();
    assert.ok(late.done);
    const kept = b.get(again.key);
    if (unfenced) {
      assert.equal(late.error, undefined);
      assert.equal(kept, undefined, 'the plain delete removes the newer holder key');
    } else {
      assertStatus(late.error, 'Unavailable', ERR_UNLOCK_KEY_NEWER.message);
      assert.equal(kept?.createRevision, Number(again.header.revision));
    }
  });
}

test('an Unlock through a member that had not heard of the grant deletes nothing; a retry does', async () => {
  const b = new TestBackend();
  const { lock, unlock } = service(b);
  const lease = await b.grant(60);
  // The member takes the Unlock in while the grant is still unknown to it ...
  const knownBefore = b.machine.revision;
  const held = await lock('lagging', lease);
  b.knownRevisionOverride = knownBefore;
  await assert.rejects(unlock(held.key), { message: ERR_UNLOCK_KEY_NEWER.message });
  assert.ok(b.get(held.key), 'nothing was deleted');
  // ... and knows it when the client sends the Unlock again.
  b.knownRevisionOverride = undefined;
  await unlock(held.key);
  assert.equal(b.get(held.key), undefined);
});
