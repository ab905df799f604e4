// Interaction tests for the SWIM state machine: a few members on an in-test network with a virtual
// clock. Each test states a protocol property and checks the events the members report.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../../base/index.js';
import { EventQueue, type SimEvent } from '../../base/event-queue.js';
import { MEMBERLIST_LAN, TENURE_LAN, type SwimConfig } from './config.js';
import type { Channel, Packet, Update } from './messages.js';
import { Swim, type SwimEvent } from './swim.js';

interface Ev {
  readonly to: string;
  readonly packet?: Packet;
  readonly channel?: Channel;
  readonly refusedFor?: string;
}

/** Members on a network with a 0.5 ms delay; a member can crash (silently or not) or stop. */
class Net {
  now = 0;
  private readonly queue = new EventQueue();
  readonly nodes = new Map<string, Swim>();
  readonly events: { t: number; at: string; e: SwimEvent }[] = [];
  private readonly crashed = new Map<string, boolean>();
  private readonly stopped = new Map<string, Ev[]>();
  private readonly nextTick = new Map<string, number>();

  constructor(private readonly config: SwimConfig) {}

  addr(name: string): string {
    return `${name}:1`;
  }

  start(name: string, epoch = 1, seeds: string[] = []): Swim {
    const s = new Swim({
      name,
      addr: this.addr(name),
      epoch,
      config: this.config,
      rng: prng(name.length * 7 + epoch),
      nowMs: this.now,
    });
    this.nodes.set(name, s);
    this.crashed.delete(name);
    s.join(
      seeds.map((n) => this.addr(n)),
      this.now,
    );
    this.flush(name);
    return s;
  }

  crash(name: string, evidence: boolean): void {
    this.crashed.set(name, evidence);
  }

  stop(name: string): void {
    this.stopped.set(name, []);
  }

  resume(name: string): void {
    const q = this.stopped.get(name) ?? [];
    this.stopped.delete(name);
    const s = this.nodes.get(name) as Swim;
    s.tick(this.now);
    this.flush(name);
    for (const e of q) this.deliver(e);
    s.tick(this.now);
    this.flush(name);
  }

  run(untilMs: number): void {
    for (;;) {
      let next = Infinity;
      let who = '';
      for (const [n, t] of this.nextTick) {
        if (t < next && !this.crashed.has(n) && !this.stopped.has(n)) {
          next = t;
          who = n;
        }
      }
      const pt = this.queue.peekTime() ?? Infinity;
      if (Math.min(next, pt) > untilMs) break;
      if (pt <= next) {
        const e = this.queue.pop() as SimEvent;
        this.now = e.at;
        e.fn();
      } else {
        this.now = next;
        (this.nodes.get(who) as Swim).tick(this.now);
        this.flush(who);
      }
    }
    this.now = untilMs;
  }

  statusAt(observer: string, target: string): string | undefined {
    return (this.nodes.get(observer) as Swim).member(target)?.status;
  }

  saw(type: string, target: string, sinceMs = 0): { t: number; at: string }[] {
    return this.events.filter(
      (x) => x.t >= sinceMs && x.e.type === type && 'name' in x.e && x.e.name === target,
    );
  }

  private deliver(e: Ev): void {
    const name = e.to.split(':')[0] as string;
    if (e.refusedFor !== undefined) {
      if (this.crashed.has(name) || this.stopped.has(name)) return;
      this.nodes.get(name)?.refused(e.refusedFor, this.now);
      this.flush(name);
      return;
    }
    const ev = this.crashed.get(name);
    if (ev !== undefined) {
      if (ev && e.packet !== undefined) {
        const from = e.packet.from.name;
        this.send({ to: this.addr(from), refusedFor: e.to });
      }
      return;
    }
    const q = this.stopped.get(name);
    if (q !== undefined) {
      q.push(e);
      return;
    }
    const s = this.nodes.get(name);
    if (s === undefined || e.packet === undefined) return;
    s.receive(e.packet, e.channel ?? 'udp', this.now);
    this.flush(name);
  }

  /** Deliver `e` after the network's 0.5 ms. */
  private send(e: Ev): void {
    this.queue.at(this.now + 0.5, 0, () => this.deliver(e));
  }

  private flush(name: string): void {
    const s = this.nodes.get(name) as Swim;
    for (const o of s.takeOutbox()) {
      this.send({ to: o.to, packet: o.packet, channel: o.channel });
    }
    for (const e of s.takeEvents()) this.events.push({ t: this.now, at: name, e });
    this.nextTick.set(name, s.nextDeadlineMs());
  }
}

function cluster(config: SwimConfig, n: number): Net {
  const net = new Net(config);
  for (let i = 0; i < n; i++) net.start(`m${i}`, 1, i === 0 ? [] : ['m0']);
  net.run(20_000);
  return net;
}

function allAlive(net: Net): boolean {
  const names = [...net.nodes.keys()];
  return names.every((o) => names.every((x) => x === o || net.statusAt(o, x) === 'alive'));
}

describe('SWIM engine (tenure preset)', () => {
  it('forms a cluster through one seed', () => {
    assert.ok(allAlive(cluster(TENURE_LAN, 6)));
  });

  it('declares a silent crash dead after P* + heartbeat, not before (3.3–4.6 s)', () => {
    const net = cluster(TENURE_LAN, 6);
    const t0 = net.now;
    net.crash('m3', false);
    net.run(t0 + 20_000);
    const dead = net.saw('dead', 'm3', t0);
    assert.equal(new Set(dead.map((d) => d.at)).size, 5, 'every live member');
    const first = Math.min(...dead.map((d) => d.t)) - t0;
    assert.ok(first >= 3300 && first <= 4600, `first dead after ${first} ms`);
  });

  it('declares a crash with a closed port dead within a second, on two refusals', () => {
    const net = cluster(TENURE_LAN, 6);
    const t0 = net.now;
    net.crash('m2', true);
    net.run(t0 + 5000);
    const dead = net.saw('dead', 'm2', t0);
    assert.ok(dead.length > 0);
    assert.ok(Math.min(...dead.map((d) => d.t)) - t0 <= 1100);
  });

  it('a 2.5 s stop gives at most suspect; the member refutes with a higher incarnation', () => {
    const net = cluster(TENURE_LAN, 6);
    const t0 = net.now;
    net.stop('m4');
    net.run(t0 + 2500);
    net.resume('m4');
    net.run(t0 + 15_000);
    assert.deepEqual(net.saw('dead', 'm4', t0), []);
    assert.ok(allAlive(net));
  });

  it('after its own 20 s stall an observer accuses no one (the stall guard)', () => {
    const net = cluster(TENURE_LAN, 6);
    const t0 = net.now;
    net.stop('m1');
    net.run(t0 + 20_000);
    const resumed = net.now;
    net.resume('m1');
    net.run(resumed + 10_000);
    const byM1 = net.events.filter(
      (x) => x.at === 'm1' && x.t >= resumed && (x.e.type === 'suspect' || x.e.type === 'dead'),
    );
    assert.deepEqual(byM1, []);
    assert.ok(net.events.some((x) => x.at === 'm1' && x.e.type === 'stall'));
  });

  it('a restart with the same name and a higher epoch is alive again at once', () => {
    const net = cluster(TENURE_LAN, 5);
    const t0 = net.now;
    net.crash('m2', false);
    net.run(t0 + 10_000);
    net.start('m2', 2, ['m0']);
    net.run(t0 + 13_000);
    assert.ok(allAlive(net));
  });

  it('a dead rumor contradicted by fresher direct contact becomes a suspicion', () => {
    const net = cluster(TENURE_LAN, 4);
    const m0 = net.nodes.get('m0') as Swim;
    const m1 = net.nodes.get('m1') as Swim;
    const now = net.now;
    // m0 has just heard from m1 directly…
    m0.receive(
      {
        type: 'gossip',
        from: { name: 'm1', addr: 'm1:1', epoch: 1, inc: m1.incarnation },
        updates: [],
      },
      'udp',
      now,
    );
    // …so a rumor that m1 has been silent for 10 s is stale.
    const rumor: Update = {
      type: 'dead',
      name: 'm1',
      epoch: 1,
      inc: m1.incarnation,
      from: 'm3',
      silentForMs: 10_000,
      reason: 'timeout',
    };
    m0.receive(
      { type: 'gossip', from: { name: 'm3', addr: 'm3:1', epoch: 1, inc: 0 }, updates: [rumor] },
      'udp',
      now + 1,
    );
    assert.equal(m0.member('m1')?.protocolStatus, 'suspect');
  });
});

describe('SWIM engine (memberlist preset)', () => {
  it('refutes a suspicion about itself by raising its incarnation', () => {
    const net = cluster(MEMBERLIST_LAN, 4);
    const m2 = net.nodes.get('m2') as Swim;
    const before = m2.incarnation;
    const u: Update = {
      type: 'suspect',
      name: 'm2',
      epoch: m2.selfEpoch,
      inc: before,
      from: 'm1',
      silentForMs: 0,
      reason: 'timeout',
    };
    m2.receive(
      { type: 'gossip', from: { name: 'm1', addr: 'm1:1', epoch: 0, inc: 0 }, updates: [u] },
      'udp',
      net.now,
    );
    assert.equal(m2.incarnation, before + 1);
    assert.ok(m2.localHealth >= 1, 'refuting raises the local health multiplier');
  });

  it('detects a silent crash after the suspicion timeout (≥ 4 s at n = 5)', () => {
    const net = cluster(MEMBERLIST_LAN, 5);
    const t0 = net.now;
    net.crash('m1', false);
    net.run(t0 + 40_000);
    const dead = net.saw('dead', 'm1', t0);
    assert.ok(dead.length > 0);
    assert.ok(Math.min(...dead.map((d) => d.t)) - t0 >= 4000);
  });
});
