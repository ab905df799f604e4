// Lease checkpoints across a leader change (lease-clock.ts; etcd's lessor Checkpoint and Promote,
// etcd-io/etcd#13491): two leaders' LeaseClocks over machines that apply one shared log. A lease
// that missed renewals is checkpointed, and the next leader continues it from the remainder —
// it expires about a TTL after its last renewal, not TTL + failover + TTL; a renewal after the
// checkpoint must reset it first; healthy leases and disabled checkpoints cost no entries.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { logIndex, term as termOf, type Term } from '../../src/core/base/units.js';
import type { Command } from '../../src/core/state/command.js';
import type { LeaseId } from '../../src/core/state/kv-types.js';
import { HandClock } from '../support/hand-clock.js';
import { LeaseClock } from '../../src/replica/member/lease-clock.js';
import { LOG_FORMAT_MAX } from '../../src/replica/member/log-record.js';
import {
  decodeEtcdEntry,
  encodeEtcdEntry,
  ServerMachine,
  type ServerResult,
} from '../../src/replica/member/server-machine.js';
import type { ProposalOutcome, Replica } from '../../src/replica/replica.js';

const TTL_SECONDS = 10;

/** One Raft log that every member's machine applies as soon as an entry is proposed. */
class SharedLog {
  readonly entries: Command[] = [];
  /** Outcomes held back: the entry is in the log, but its proposer has not heard so yet. */
  holdOutcomes = false;
  readonly held: (() => void)[] = [];
  readonly machines: ServerMachine[] = [];

  append(data: Uint8Array, done: (o: ProposalOutcome<ServerResult>) => void): void {
    const cmd = decodeEtcdEntry(data);
    assert.ok(cmd);
    this.entries.push(cmd);
    const index = logIndex(this.entries.length);
    let result: ServerResult | undefined;
    for (const m of this.machines) result = m.apply(index, data);
    assert.ok(result);
    const r = result;
    const tell = (): void => done({ ok: true, result: r, index });
    if (this.holdOutcomes) this.held.push(tell);
    else tell();
  }

  of(type: Command['type']): Command[] {
    return this.entries.filter((c) => c.type === type);
  }
}

interface Leader {
  readonly clock: HandClock;
  readonly leases: LeaseClock;
  readonly machine: ServerMachine;
  readonly raft: { role: 'leader' | 'follower'; term: Term };
  readonly revokes: LeaseId[];
}

function member(log: SharedLog, clockAtMs: number, checkpoint = true): Leader {
  const clock = new HandClock(clockAtMs);
  const machine = new ServerMachine();
  log.machines.push(machine);
  const raft = { role: 'follower' as 'leader' | 'follower', term: termOf(1) };
  const revokes: LeaseId[] = [];
  const replica = {
    raft,
    catchUpNow: () => {},
    propose: (data: Uint8Array, done: (o: ProposalOutcome<ServerResult>) => void) =>
      log.append(data, done),
  } as unknown as Replica<ServerResult>;
  const leases = new LeaseClock({
    replica: () => replica,
    machine: machine.etcd,
    clock,
    logFormat: () => LOG_FORMAT_MAX,
    proposeRevoke: (id) => {
      revokes.push(id);
      return Promise.resolve();
    },
    warn: () => {},
    mutants: NO_MUTANTS,
    checkpoint,
  });
  return { clock, leases, machine, raft, revokes };
}

function lead(l: Leader, t: number): void {
  l.raft.role = 'leader';
  l.raft.term = termOf(t);
  l.leases.ensureRefresh();
  assert.ok(l.leases.ready, 'the refresh applied');
}

function grant(log: SharedLog, l: Leader, id: LeaseId): void {
  const cmd: Command = { type: 'leaseGrant', id, ttlSeconds: TTL_SECONDS, nowMs: l.clock.now };
  log.append(encodeEtcdEntry(cmd, LOG_FORMAT_MAX), () => {});
}

/** The first time on `l`'s clock, from `fromMs` in steps of 1 ms, at which it revokes `id`. */
function revokedAtMs(l: Leader, id: LeaseId, fromMs: number, untilMs: number): number | null {
  for (let t = fromMs; t <= untilMs; t++) {
    l.clock.now = t;
    l.leases.expire();
    if (l.revokes.includes(id)) return t;
  }
  return null;
}

/**
 * Leader A grants lease 1 at 0 and renews it at 1000 (deadline 11,000); its holder dies. At 6500
 * less than 0.6 of the TTL remains (4500 ms): A checkpoints it, and dies. B takes over at its own
 * clock's 50,000.
 */
function scenario(checkpoint: boolean): { log: SharedLog; a: Leader; b: Leader } {
  const log = new SharedLog();
  const a = member(log, 0, checkpoint);
  const b = member(log, 50_000, checkpoint);
  lead(a, 1);
  grant(log, a, 1n);
  a.clock.now = 1000;
  assert.equal(a.leases.renew(1n, 1000).ttlSeconds, TTL_SECONDS);
  a.clock.now = 6500;
  a.leases.expire();
  a.raft.role = 'follower';
  return { log, a, b };
}

test("a new leader continues a lease from the old leader's checkpoint", () => {
  const { log, b } = scenario(true);
  assert.deepEqual(log.of('leaseCheckpoint'), [
    { type: 'leaseCheckpoint', checkpoints: [{ id: 1n, remainingTtlSeconds: 4.5 }] },
  ]);
  lead(b, 2);
  assert.equal(b.machine.etcd.leaseInfo(1n)?.checkpointed, false, 'the refresh consumed it');
  // 4500 ms × (1 + 2ρ) = 4545 ms after B's refresh: about a TTL after the last renewal.
  assert.equal(revokedAtMs(b, 1n, 50_000, 70_000), 50_000 + 4545);
  // B checkpoints it again while it stays below LEASE_CHECKPOINT_TTL_FRACTION of its TTL.
  assert.equal(b.machine.etcd.leaseInfo(1n)?.checkpointed, true);
});

test('without checkpoints the new leader gives the full TTL from its refresh', () => {
  const { log, b } = scenario(false);
  assert.deepEqual(log.of('leaseCheckpoint'), []);
  lead(b, 2);
  assert.equal(revokedAtMs(b, 1n, 50_000, 70_000), 50_000 + TTL_SECONDS * 1000);
});

test('a renewal after a committed checkpoint needs a reset, and then gets the full TTL', () => {
  const log = new SharedLog();
  const a = member(log, 0);
  const b = member(log, 50_000);
  lead(a, 1);
  grant(log, a, 1n);
  a.clock.now = 6000;
  a.leases.expire();
  assert.equal(log.of('leaseCheckpoint').length, 1);
  assert.equal(a.leases.needsReset(1n), true);
  // The renewal at 6000 (deadline 16,000) commits the reset before it is answered.
  assert.equal(a.leases.renew(1n, 6000).ttlSeconds, TTL_SECONDS);
  log.append(a.leases.resetEntry(1n), () => {});
  assert.equal(a.leases.needsReset(1n), false);
  a.clock.now = 6500;
  a.leases.expire();
  assert.equal(log.of('leaseCheckpoint').length, 2, 'a renewed lease is not checkpointed again');
  a.raft.role = 'follower';
  lead(b, 2);
  assert.equal(revokedAtMs(b, 1n, 50_000, 70_000), 50_000 + TTL_SECONDS * 1000);
});

test('a checkpoint in flight needs a reset too: it may still commit', () => {
  const log = new SharedLog();
  const a = member(log, 0);
  member(log, 0);
  lead(a, 1);
  grant(log, a, 1n);
  log.holdOutcomes = true;
  a.clock.now = 6000;
  a.leases.expire();
  assert.equal(a.leases.needsReset(1n), true);
  // Its outcome arrives: the applied state now tells (a checkpoint in force).
  for (const tell of log.held.splice(0)) tell();
  log.holdOutcomes = false;
  assert.equal(a.leases.needsReset(1n), true);
  log.append(a.leases.resetEntry(1n), () => {});
  assert.equal(a.leases.needsReset(1n), false);
});

test('healthy keepalives cost no checkpoint; missed ones share one entry per check', () => {
  const log = new SharedLog();
  const a = member(log, 0);
  lead(a, 1);
  for (const id of [1n, 2n, 3n, 4n]) grant(log, a, id);
  // Lease 1 is renewed every TTL/3; 2, 3 and 4 never.
  for (let t = 0; t <= 9000; t += 500) {
    a.clock.now = t;
    if (t % 3000 === 0) a.leases.renew(1n, t);
    a.leases.expire();
  }
  const cps = log.of('leaseCheckpoint');
  // Below 0.6 of the TTL after 4000 (4500, 5000, ... 9000): one entry per check, all three in it,
  // the most urgent first. Lease 1 never falls below 7000 ms of its 10,000.
  assert.equal(cps.length, 10);
  for (const c of cps) {
    assert.ok(c.type === 'leaseCheckpoint');
    assert.deepEqual(
      c.checkpoints.map((x) => x.id),
      [2n, 3n, 4n],
    );
  }
  assert.equal(a.leases.needsReset(1n), false);
});

test('a deadline between two periodic checks is revoked at the deadline, not at the next check', () => {
  const log = new SharedLog();
  const a = member(log, 0);
  lead(a, 1);
  a.clock.now = 250;
  grant(log, a, 1n);
  // Periodic checks at 500 ms steps; the deadline is 10,250.
  for (let t = 500; t <= 10_000; t += 500) {
    a.clock.runDue(t);
    a.leases.expire();
  }
  assert.deepEqual(a.revokes, []);
  a.clock.runDue(10_249);
  assert.deepEqual(a.revokes, [], 'not before its deadline');
  a.clock.runDue(10_250);
  assert.deepEqual(a.revokes, [1n], 'the check armed for the deadline revoked it');
  assert.equal(a.clock.pending, 0, 'nothing else armed');
});
