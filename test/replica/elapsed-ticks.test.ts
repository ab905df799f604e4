// A leader counts the time that passed, not the timer callbacks that ran: a process stopped for
// longer than two election timeouts (SIGSTOP, a starved VM) wakes up, and before it answers the
// first request it has stepped down (CheckQuorum, Raft thesis §6.2), however few of its periodic
// timers fired in between. With the planted keepaliveUnconfirmed mutant (the code before the fix:
// one tick per callback) the same leader still believes it leads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS, type Mutants } from '../../src/core/base/mutants.js';
import { nodeId, term } from '../../src/core/base/units.js';
import type { Message } from '../../src/core/raft/types.js';
import type { Cancel, Clock, Disk } from '../../src/replica/io.js';
import { Replica, type ReadOutcome } from '../../src/replica/replica.js';
import type { StateMachine } from '../../src/core/state/machine.js';

/** A clock the test moves by hand; periodic timers fire only when the test says so. */
class HandClock implements Clock {
  now = 0;
  private periodic: (() => void)[] = [];
  nowMs(): number {
    return this.now;
  }
  every(_intervalMs: number, fn: () => void): Cancel {
    this.periodic.push(fn);
    return () => (this.periodic = this.periodic.filter((f) => f !== fn));
  }
  after(_delayMs: number, fn: () => void): Cancel {
    queueMicrotask(fn);
    return () => {};
  }
  /** One firing of every periodic timer, as after a stall: late, and only once. */
  fire(): void {
    for (const f of [...this.periodic]) f();
  }
}

/** Durable at once. */
class InstantDisk implements Disk {
  private readonly files = new Map<string, Uint8Array[]>();
  read(name: string): Uint8Array | undefined {
    const parts = this.files.get(name);
    if (!parts) return undefined;
    return Buffer.concat(parts);
  }
  append(name: string, bytes: Uint8Array): void {
    const parts = this.files.get(name) ?? [];
    parts.push(bytes.slice());
    this.files.set(name, parts);
  }
  sync(_name: string, done: () => void): void {
    done();
  }
  replace(name: string, bytes: Uint8Array, done: () => void): void {
    this.files.set(name, [bytes.slice()]);
    done();
  }
  truncate(_name: string, _length: number, done: () => void): void {
    done();
  }
}

const nothing: StateMachine<undefined> = {
  apply: () => undefined,
  snapshot: () => new Uint8Array(0),
  restore: () => {},
  digest: () => 1,
};

const n1 = nodeId(1);
const n2 = nodeId(2);
const TICK_MS = 10;
const ELECTION_TICKS = 10;

/** Node 1 of three, made leader with node 2's votes; node 3 is never heard from. */
function leader(mutants: Mutants): { replica: Replica<undefined>; clock: HandClock } {
  const clock = new HandClock();
  const sent: Message[] = [];
  const replica = new Replica<undefined>(
    {
      id: n1,
      initialConf: { voters: [n1, n2, nodeId(3)], learners: [] },
      tickMs: TICK_MS,
      electionTicks: ELECTION_TICKS,
      heartbeatTicks: 1,
      snapshotEntries: 1000,
      snapshotKeepEntries: 10,
      seed: 7,
      mutants,
    },
    nothing,
    clock,
    { send: (m) => sent.push(m) },
    new InstantDisk(),
  );
  // Time passes in ticks until node 1 campaigns; node 2 grants its pre-vote and its vote.
  for (let i = 0; i < 4 * ELECTION_TICKS && replica.raft.role === 'follower'; i++) {
    clock.now += TICK_MS;
    clock.fire();
  }
  const grant = (type: 'preVoteResp' | 'voteResp'): void => {
    const ask = sent.find((m) => m.type === (type === 'preVoteResp' ? 'preVote' : 'vote'));
    assert.ok(ask, `node 1 sent no ${type === 'preVoteResp' ? 'pre-vote' : 'vote'}`);
    sent.length = 0;
    replica.receive({ type, from: n2, to: n1, term: ask.term, reject: false });
  };
  grant('preVoteResp');
  grant('voteResp');
  assert.equal(replica.raft.role, 'leader');
  assert.ok(replica.raft.term >= term(1));
  return { replica, clock };
}

function readNow(replica: Replica<undefined>): ReadOutcome | 'pending' {
  let out: ReadOutcome | 'pending' = 'pending';
  replica.read((o) => (out = o));
  return out;
}

test('a leader that slept three election timeouts steps down before it answers a read', () => {
  const { replica, clock } = leader(NO_MUTANTS);
  // Stopped for 3 s: not one timer fired. The first thing it does on waking is this read.
  clock.now += 3_000;
  const o = readNow(replica);
  assert.notEqual(o, 'pending', 'the read waited: the node still believed it led');
  assert.equal(o !== 'pending' && !o.ok && o.reason, 'notLeader');
  assert.notEqual(replica.raft.role, 'leader');
});

test('one late timer callback counts all the time it was late', () => {
  const { replica, clock } = leader(NO_MUTANTS);
  clock.now += 3_000;
  clock.fire();
  assert.notEqual(replica.raft.role, 'leader');
});

test('with ticks counted per callback (the mutant), the same leader still leads', () => {
  const { replica, clock } = leader(new Set(['keepaliveUnconfirmed']));
  clock.now += 3_000;
  clock.fire();
  assert.equal(replica.raft.role, 'leader', 'the mutant did not plant the old behaviour');
  assert.equal(readNow(replica), 'pending');
});
