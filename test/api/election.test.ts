// The Election service (etcd's server/etcdserver/api/v3election/election.go, on the recipe in
// client/v3/concurrency/election.go) called through its handlers over a MemoryBackend: Campaign
// (key layout, header of the queueing txn, lease 0, missing lease, FIFO by create revision,
// re-campaign with one lease, cancellation), the deliberate fix of etcd's phantom leadership
// (etcd#19597), Proclaim, Resign, Leader and the Observe stream. Lease expiry is driven by the
// injected fakeClock and the backend's expiry pass; no test sleeps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import type { KeyValue, LeaseId } from '../../src/core/state/kv-types.js';
import type { ProtoHeader, ProtoKeyValue } from '../../src/server/api/convert.js';
import { statusOf } from '../../src/server/api/convert.js';
import { electionHandlers } from '../../src/server/api/election.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A MemoryBackend on a fake fakeClock that counts open watch hubs. */
class TestBackend extends MemoryBackend {
  readonly fakeClock: { nowMs: number };
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

interface WireLeaderKey {
  readonly name: Buffer;
  readonly key: Buffer;
  readonly rev: string;
  readonly lease: string;
}

interface CampaignReply {
  readonly header: ProtoHeader;
  readonly leader: WireLeaderKey;
}

interface LeaderReply {
  readonly header: ProtoHeader;
  readonly kv: ProtoKeyValue;
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

function service(backend: TestBackend) {
  const { unary, serverStream } = electionHandlers(backend);
  const method = (name: string) => {
    const h = unary[`/v3electionpb.Election/${name}`];
    assert.ok(h, name);
    return h;
  };
  const observe = serverStream['/v3electionpb.Election/Observe'];
  assert.ok(observe);
  return {
    campaign: (name: string, lease: LeaseId, value: string, signal?: AbortSignal) =>
      method('Campaign')(
        { name: Buffer.from(name), lease: lease.toString(), value: Buffer.from(value) },
        callInfo(signal),
      ) as Promise<CampaignReply>,
    proclaim: (leader: WireLeaderKey | null, value: string) =>
      method('Proclaim')({ leader, value: Buffer.from(value) }, callInfo()) as Promise<{
        header: ProtoHeader;
      }>,
    resign: (leader: WireLeaderKey | null) =>
      method('Resign')({ leader }, callInfo()) as Promise<{ header: ProtoHeader }>,
    leader: (name: string) =>
      method('Leader')({ name: Buffer.from(name) }, callInfo()) as Promise<LeaderReply>,
    observe: (name: string, signal: AbortSignal, seen: LeaderReply[]) =>
      observe({ name: Buffer.from(name) }, callInfo(signal), (r) => {
        seen.push(r as LeaderReply);
        return Promise.resolve();
      }),
  };
}

function assertStatus(error: unknown, code: string, message: string): void {
  assert.deepEqual(statusOf(error), { code, message });
}

const expectStatus = (code: string, message: string) => (e: unknown) => {
  assertStatus(e, code, message);
  return true;
};

test('an uncontended Campaign wins at once: key name/hex(lease), rev = create revision', async () => {
  const b = new TestBackend();
  const e = service(b);
  const lease = await b.grant(60);
  const r = await e.campaign('svc', lease, 'node-a');
  assert.equal(dec.decode(r.leader.key), `svc/${lease.toString(16)}`);
  assert.equal(dec.decode(r.leader.name), 'svc');
  assert.equal(r.leader.lease, lease.toString());
  const kv = b.get(r.leader.key);
  assert.ok(kv);
  assert.equal(r.leader.rev, String(kv.createRevision));
  assert.equal(r.header.revision, r.leader.rev);
  assert.equal(dec.decode(kv.value), 'node-a');
  assert.equal(kv.lease, lease);

  const l = await e.leader('svc');
  assert.equal(dec.decode(l.kv.value), 'node-a');
  assert.equal(l.kv.create_revision, r.leader.rev);
  assert.equal(l.header.revision, String(b.machine.revision));
  assert.equal(b.openHubs, 0);
});

test('lease 0 campaigns under a fresh, unattended 60 s lease', async () => {
  const b = new TestBackend();
  const e = service(b);
  const r = await e.campaign('zero', 0n, 'v');
  const lease = BigInt(r.leader.lease);
  assert.notEqual(lease, 0n);
  assert.equal(b.machine.leaseTimeToLive(lease, b.fakeClock.nowMs, false).grantedTtlSeconds, 60);
  b.fakeClock.nowMs += 61_000;
  await b.expireLeases();
  await assert.rejects(e.leader('zero'), expectStatus('Unknown', 'election: no leader'));
});

test('a lease that does not exist: "etcdserver: requested lease not found"', async () => {
  const b = new TestBackend();
  const e = service(b);
  await assert.rejects(
    e.campaign('nl', 0xabcn, 'v'),
    expectStatus('NotFound', 'etcdserver: requested lease not found'),
  );
});

test('candidates win in create-revision order; the header is that of the queueing put', async () => {
  const b = new TestBackend();
  const e = service(b);
  const a = await e.campaign('order', await b.grant(60), 'a');
  const second = track(e.campaign('order', await b.grant(60), 'b'));
  const third = track(e.campaign('order', await b.grant(60), 'c'));
  await b.settle();
  assert.equal(second.done, false);
  assert.equal(third.done, false);
  assert.equal(dec.decode((await e.leader('order')).kv.value), 'a');

  await e.resign(a.leader);
  await b.settle();
  assert.ok(second.value, String(second.error));
  assert.equal(third.done, false);
  // etcd's Campaign returns the header of the txn that queued the candidate (Election.Campaign
  // in client/v3/concurrency/election.go).
  assert.equal(second.value.header.revision, second.value.leader.rev);
  assert.ok(Number(second.value.header.revision) < b.machine.revision);
  assert.equal(dec.decode((await e.leader('order')).kv.value), 'b');

  await e.resign(second.value.leader);
  await b.settle();
  assert.ok(third.value, String(third.error));
  assert.equal(b.openHubs, 0);
});

test('#19597: a candidate whose lease expires while queued fails instead of winning', async () => {
  const b = new TestBackend();
  const e = service(b);
  await e.campaign('ph', await b.grant(60), 'leader');
  const lease = await b.grant(5);
  const candidate = track(e.campaign('ph', lease, 'zombie'));
  await b.settle();

  b.fakeClock.nowMs += 6_000;
  await b.expireLeases();
  await b.settle();
  assert.equal(candidate.done, true);
  assertStatus(candidate.error, 'NotFound', 'etcdserver: requested lease not found');
  assert.equal(dec.decode((await e.leader('ph')).kv.value), 'leader');
  assert.equal(b.openHubs, 0);
});

test('#19597: when leader and candidate leases lapse together, nobody is elected', async () => {
  const b = new TestBackend();
  const e = service(b);
  await e.campaign('both', await b.grant(5), 'leader');
  const candidate = track(e.campaign('both', await b.grant(5), 'zombie'));
  await b.settle();

  // etcd's Campaign returns success here once the predecessor's key goes (#19597: phantom
  // leadership with no key and no lease).
  b.fakeClock.nowMs += 6_000;
  await b.expireLeases();
  await b.settle();
  assertStatus(candidate.error, 'NotFound', 'etcdserver: requested lease not found');
  await assert.rejects(e.leader('both'), expectStatus('Unknown', 'election: no leader'));
});

test('a queued candidate resigned from elsewhere fails with "election: not leader"', async () => {
  const b = new TestBackend();
  const e = service(b);
  await e.campaign('rs', await b.grant(60), 'leader');
  const lease = await b.grant(60);
  const candidate = track(e.campaign('rs', lease, 'c'));
  await b.settle();
  await b.propose({
    type: 'deleteRange',
    request: { key: enc.encode(`rs/${lease.toString(16)}`) },
  });
  await b.settle();
  assertStatus(candidate.error, 'Unknown', 'election: not leader');
});

test('a cancelled Campaign withdraws its key', async () => {
  const b = new TestBackend();
  const e = service(b);
  const a = await e.campaign('cx', await b.grant(60), 'a');
  const ac = new AbortController();
  const lease = await b.grant(60);
  const cancelled = track(e.campaign('cx', lease, 'b', ac.signal));
  await b.settle();
  assert.ok(b.get(`cx/${lease.toString(16)}`));
  ac.abort();
  await b.settle();
  assertStatus(cancelled.error, 'Canceled', 'etcdserver: request canceled');
  assert.equal(b.get(`cx/${lease.toString(16)}`), undefined);
  assert.ok(b.get(a.leader.key));
  assert.equal(b.openHubs, 0);
});

test('campaigning again with the same lease keeps the key and proclaims the new value', async () => {
  const b = new TestBackend();
  const e = service(b);
  const lease = await b.grant(60);
  const first = await e.campaign('again', lease, 'v1');
  const second = await e.campaign('again', lease, 'v2');
  assert.deepEqual(second.leader, first.leader);
  const kv = b.get(first.leader.key);
  assert.equal(kv?.createRevision, Number(first.leader.rev));
  assert.equal(dec.decode(kv?.value ?? new Uint8Array()), 'v2');
  assert.equal(kv?.version, 2);
});

test('Proclaim updates the value only while the leader key is the same incarnation', async () => {
  const b = new TestBackend();
  const e = service(b);
  const lease = await b.grant(60);
  const r = await e.campaign('pr', lease, 'v1');
  const p = await e.proclaim(r.leader, 'v2');
  assert.equal(p.header.revision, String(b.machine.revision));
  const l = await e.leader('pr');
  assert.equal(dec.decode(l.kv.value), 'v2');
  assert.equal(l.kv.lease, lease.toString(), 'the key stays on the leader lease');

  await assert.rejects(
    e.proclaim({ ...r.leader, rev: String(Number(r.leader.rev) + 100) }, 'v3'),
    expectStatus('Unknown', 'election: not leader'),
  );
  await e.resign(r.leader);
  await assert.rejects(e.proclaim(r.leader, 'v4'), expectStatus('Unknown', 'election: not leader'));
  await assert.rejects(
    e.proclaim(null, 'v5'),
    expectStatus('Unknown', '"leader" field must be provided'),
  );
});

test('Resign deletes only the same incarnation and succeeds either way', async () => {
  const b = new TestBackend();
  const e = service(b);
  const r = await e.campaign('rz', await b.grant(60), 'v');
  const wrong = await e.resign({ ...r.leader, rev: '1' });
  assert.equal(wrong.header.revision, String(b.machine.revision));
  assert.ok(b.get(r.leader.key), 'a stale LeaderKey resigns nothing');
  const right = await e.resign(r.leader);
  assert.equal(right.header.revision, String(b.machine.revision));
  assert.equal(b.get(r.leader.key), undefined);
  await assert.rejects(e.resign(null), expectStatus('Unknown', '"leader" field must be provided'));
});

test('Leader with no candidate: "election: no leader" (code Unknown)', async () => {
  const b = new TestBackend();
  await assert.rejects(service(b).leader('none'), expectStatus('Unknown', 'election: no leader'));
});

test('Observe streams the leader, its proclamations and each next leader', async () => {
  const b = new TestBackend();
  const e = service(b);
  const ac = new AbortController();
  const seen: LeaderReply[] = [];
  const stream = track(e.observe('ob', ac.signal, seen));
  await b.settle();
  assert.equal(seen.length, 0, 'no leader yet: nothing is sent');

  const a = await e.campaign('ob', await b.grant(60), 'a1');
  await b.settle();
  await e.proclaim(a.leader, 'a2');
  const queued = track(e.campaign('ob', await b.grant(60), 'b1'));
  await b.settle();
  await e.resign(a.leader);
  await b.settle();
  assert.ok(queued.value);
  // Unrelated keys under another name do not show.
  await e.campaign('other', await b.grant(60), 'x');
  await b.settle();

  assert.deepEqual(
    seen.map((r) => dec.decode(r.kv.value)),
    ['a1', 'a2', 'b1'],
  );
  assert.equal(seen[0]?.kv.key.toString(), dec.decode(a.leader.key));
  assert.equal(seen[2]?.kv.create_revision, queued.value.leader.rev);
  for (const r of seen) assert.ok(Number(r.header.revision) >= Number(r.kv.mod_revision));

  ac.abort();
  await b.settle();
  assertStatus(stream.error, 'Canceled', 'etcdserver: request canceled');
  assert.equal(b.openHubs, 0);
});

test('Observe starts from the current leader and follows it across a lease expiry', async () => {
  const b = new TestBackend();
  const e = service(b);
  await e.campaign('ob2', await b.grant(5), 'first');
  const next = track(e.campaign('ob2', await b.grant(60), 'second'));
  const ac = new AbortController();
  const seen: LeaderReply[] = [];
  const stream = track(e.observe('ob2', ac.signal, seen));
  await b.settle();
  assert.deepEqual(
    seen.map((r) => dec.decode(r.kv.value)),
    ['first'],
  );
  b.fakeClock.nowMs += 6_000;
  await b.expireLeases();
  await b.settle();
  assert.ok(next.value);
  assert.deepEqual(
    seen.map((r) => dec.decode(r.kv.value)),
    ['first', 'second'],
  );
  ac.abort();
  await b.settle();
  assert.equal(stream.done, true);
  assert.equal(b.openHubs, 0);
});
