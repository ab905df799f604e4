// The detectors the harness compares, behind one simulator interface. Every one is driven by the
// same seeded scenarios at (about) the same message budget, the memberlist LAN budget of ~2 packets
// per node per second at steady state:
//
// - tenure          tenure's SWIM + Lifeguard + watch (core/detect/swim/config.ts TENURE_LAN)
// - memberlist      SWIM + Lifeguard with memberlist's LAN defaults (MEMBERLIST_LAN)
// - swim            SWIM as published: fixed suspicion timeout, no Lifeguard (SWIM_PLAIN)
// - akka-phi        Akka's φ (logistic, threshold 8, σ ≥ 100 ms, pause 3 s, bootstrap mean ± mean/4)
// - fixed-timeout   Akka's DeadlineFailureDetector: heartbeat interval + 3 s pause = 4 intervals
// - cassandra-phi   Cassandra's gossip (SYN/ACK/ACK2 every 1 s) and exponential φ > 8 (18.4 × mean),
//                   MAX_INTERVAL 2 s, 5 s local-pause guard
//
// Budget notes. Akka monitors each node from 9 others with request/response heartbeats (18
// packets/node/s); at the memberlist budget the heartbeat baselines monitor 1 ring successor each
// (request + response = 2 packets/node/s) and spread verdicts with memberlist's gossip (3 members
// every 200 ms while there is news, RetransmitMult 4). Cassandra keeps its own 1 s gossip (3 packets per
// round, ~3 packets/node/s): above the budget, which can only help it. All are re-implemented
// from the published descriptions; none is copied code.

import { assert, fnvString, FNV_OFFSET, type Prng } from '../core/base/index.js';
import {
  akkaPhiConfig,
  cassandraPhiConfig,
  FixedTimeoutDetector,
  MEMBERLIST_LAN,
  PhiAccrualDetector,
  retransmitLimit,
  Swim,
  SWIM_PLAIN,
  TENURE_LAN,
  type HeartbeatDetector,
  type Packet,
  type SwimConfig,
} from '../core/detect/index.js';
import type { ChannelKind } from './network.js';

export type VerdictStatus = 'alive' | 'suspect' | 'dead' | 'left';

export interface Verdict {
  readonly target: string;
  readonly status: VerdictStatus;
  /**
   * Which life of the target the verdict is about, when the detector tells lives apart (tenure's
   * epochs, Akka's UIDs, Cassandra's generations); absent when identity is the name alone.
   */
  readonly epoch?: number;
  /** Whether this observer reached the verdict itself (false: it adopted someone's rumor). */
  readonly own?: boolean;
}

export interface LinkVerdict {
  readonly target: string;
  readonly unreachable: boolean;
}

export interface SimSend {
  readonly to: string;
  readonly packet: unknown;
  readonly channel: ChannelKind;
  readonly evidence: boolean;
}

/** One node of a detector under test, as the simulator drives it. Times are local monotonic ms. */
export interface SimNode {
  start(seeds: readonly string[], nowMs: number): void;
  tick(nowMs: number): void;
  receive(packet: unknown, channel: ChannelKind, nowMs: number): void;
  refused(addr: string, nowMs: number): void;
  nextDeadlineMs(): number;
  takeOutbox(): SimSend[];
  takeVerdicts(): Verdict[];
  takeLinkVerdicts(): LinkVerdict[];
}

export interface NodeContext {
  readonly name: string;
  readonly addr: string;
  /** Increases with every restart of this name. */
  readonly epoch: number;
  readonly rng: Prng;
  readonly nowMs: number;
  /** Members known from static configuration (Akka's and Cassandra's seed lists). */
  readonly roster: readonly { readonly name: string; readonly addr: string }[];
}

export interface DetectorSpec {
  readonly name: string;
  readonly description: string;
  create(ctx: NodeContext): SimNode;
}

// -----------------------------------------------------------------------------------------------
// SWIM family

class SwimSimNode implements SimNode {
  private readonly swim: Swim;
  private verdicts: Verdict[] = [];
  private links: LinkVerdict[] = [];

  private readonly epochs: boolean;
  private readonly self: string;

  constructor(ctx: NodeContext, config: SwimConfig) {
    this.epochs = config.epochIdentity;
    this.self = ctx.name;
    this.swim = new Swim({
      name: ctx.name,
      addr: ctx.addr,
      epoch: config.epochIdentity ? ctx.epoch : 0,
      config,
      rng: ctx.rng,
      nowMs: ctx.nowMs,
    });
  }

  start(seeds: readonly string[], nowMs: number): void {
    this.swim.join(seeds, nowMs);
  }

  tick(nowMs: number): void {
    this.swim.tick(nowMs);
  }

  receive(packet: unknown, channel: ChannelKind, nowMs: number): void {
    this.swim.receive(packet as Packet, channel, nowMs);
  }

  refused(addr: string, nowMs: number): void {
    this.swim.refused(addr, nowMs);
  }

  nextDeadlineMs(): number {
    return this.swim.nextDeadlineMs();
  }

  takeOutbox(): SimSend[] {
    return this.swim.takeOutbox();
  }

  takeVerdicts(): Verdict[] {
    this.drain();
    const v = this.verdicts;
    this.verdicts = [];
    return v;
  }

  takeLinkVerdicts(): LinkVerdict[] {
    this.drain();
    const v = this.links;
    this.links = [];
    return v;
  }

  private drain(): void {
    for (const e of this.swim.takeEvents()) {
      if (e.type === 'unreachable' || e.type === 'reachable') {
        this.links.push({ target: e.name, unreachable: e.type === 'unreachable' });
      } else if ('epoch' in e) {
        this.verdicts.push({
          target: e.name,
          status: e.type,
          own: e.by === this.self,
          ...(this.epochs ? { epoch: e.epoch } : {}),
        });
      }
    }
  }
}

// -----------------------------------------------------------------------------------------------
// Heartbeat baselines: fixed timeout and Akka's φ

interface HbVerdict {
  readonly name: string;
  readonly addr: string;
  readonly epoch: number;
  readonly seq: number;
  readonly status: 'alive' | 'dead';
}

interface HbFrom {
  readonly name: string;
  readonly addr: string;
  readonly epoch: number;
}

type HbPacket =
  | {
      readonly type: 'hbReq';
      readonly from: HbFrom;
      readonly seq: number;
      readonly verdicts: HbVerdict[];
    }
  | {
      readonly type: 'hbRsp';
      readonly from: HbFrom;
      readonly seq: number;
      readonly verdicts: HbVerdict[];
    }
  | { readonly type: 'hbGossip'; readonly from: HbFrom; readonly verdicts: HbVerdict[] }
  /** Joining: ask a seed for the membership state (Akka's Join → Welcome with the full gossip). */
  | { readonly type: 'hbJoin'; readonly from: HbFrom; readonly verdicts: HbVerdict[] }
  | { readonly type: 'hbWelcome'; readonly from: HbFrom; readonly verdicts: HbVerdict[] };

interface HbMember {
  addr: string;
  epoch: number;
  seq: number;
  status: 'alive' | 'dead';
  readonly ringKey: number;
}

interface Monitored {
  readonly detector: HeartbeatDetector;
  epoch: number;
  /** Our own request counter towards it: verdicts are ordered by it. */
  seq: number;
  /** Akka's expected-response-after: start judging even if the first answer never comes. */
  firstExpectedMs: number | null;
  dead: boolean;
}

export interface HeartbeatBaselineConfig {
  readonly heartbeatIntervalMs: number;
  /** Members each node monitors (its ring successors): 1 = request + response = 2 packets/s. */
  readonly monitors: number;
  /** Akka's unreachable-nodes-reaper-interval: how often verdicts are re-evaluated, ms. */
  readonly checkIntervalMs: number;
  /** Akka's expected-response-after, ms. */
  readonly expectedResponseAfterMs: number;
  readonly gossipIntervalMs: number;
  readonly gossipNodes: number;
  readonly retransmitMult: number;
  readonly makeDetector: () => HeartbeatDetector;
}

/**
 * The baselines that queue packets and verdicts themselves (heartbeat and Cassandra): the
 * simulation drains both after every step; they report no link-level verdicts.
 */
abstract class QueuedSimNode {
  protected outbox: SimSend[] = [];
  protected verdicts: Verdict[] = [];

  takeOutbox(): SimSend[] {
    const o = this.outbox;
    this.outbox = [];
    return o;
  }

  takeVerdicts(): Verdict[] {
    const v = this.verdicts;
    this.verdicts = [];
    return v;
  }

  takeLinkVerdicts(): LinkVerdict[] {
    return [];
  }
}

/**
 * Akka's cluster heartbeat, reduced to the budget: every node sends a heartbeat request each
 * second to the members it monitors (its ring successors, plus any it judged unreachable, which it
 * keeps watching as Akka's HeartbeatNodeRing does), records the arrival of each response in a
 * failure detector, and re-evaluates reachability on a reaper tick. A verdict — ordered by the
 * observer's request counter per target life — spreads by gossip; only its author reverses it.
 */
class HeartbeatSimNode extends QueuedSimNode implements SimNode {
  private readonly members = new Map<string, HbMember>();
  private readonly monitored = new Map<string, Monitored>();
  private readonly queue = new Map<string, { v: HbVerdict; sent: number }>();
  private nextHeartbeatMs: number;
  private nextCheckMs: number;
  private nextGossipMs: number;
  private readonly self: HbFrom;
  private readonly rng: Prng;
  private now: number;

  constructor(
    ctx: NodeContext,
    private readonly c: HeartbeatBaselineConfig,
  ) {
    super();
    this.self = { name: ctx.name, addr: ctx.addr, epoch: ctx.epoch };
    this.rng = ctx.rng;
    this.now = ctx.nowMs;
    this.nextHeartbeatMs = ctx.nowMs + this.rng.next() * c.heartbeatIntervalMs;
    this.nextCheckMs = ctx.nowMs + this.rng.next() * c.checkIntervalMs;
    this.nextGossipMs = ctx.nowMs + this.rng.next() * c.gossipIntervalMs;
    for (const r of ctx.roster) {
      if (r.name === ctx.name) continue;
      this.members.set(r.name, {
        addr: r.addr,
        epoch: 0,
        seq: 0,
        status: 'alive',
        ringKey: key(r.name),
      });
      this.verdicts.push({ target: r.name, status: 'alive' });
    }
  }

  start(seeds: readonly string[], nowMs: number): void {
    this.now = nowMs;
    const hello: HbVerdict = { ...this.self, seq: 0, status: 'alive' };
    for (const s of seeds.slice(0, 1)) {
      this.send(s, { type: 'hbJoin', from: this.self, verdicts: [hello] });
    }
  }

  tick(nowMs: number): void {
    this.now = nowMs;
    if (nowMs >= this.nextHeartbeatMs) {
      this.syncMonitored();
      for (const [name, mon] of this.monitored) {
        const m = this.members.get(name);
        if (m === undefined) continue;
        mon.seq++;
        this.send(m.addr, { type: 'hbReq', from: this.self, seq: mon.seq, verdicts: this.take() });
      }
      this.nextHeartbeatMs = Math.max(this.nextHeartbeatMs + this.c.heartbeatIntervalMs, nowMs);
    }
    if (nowMs >= this.nextCheckMs) {
      this.check();
      this.nextCheckMs = Math.max(this.nextCheckMs + this.c.checkIntervalMs, nowMs);
    }
    if (nowMs >= this.nextGossipMs) {
      if (this.queue.size > 0) {
        for (const addr of this.randomAlive(this.c.gossipNodes)) {
          if (this.queue.size === 0) break;
          this.send(addr, { type: 'hbGossip', from: this.self, verdicts: this.take() });
        }
      }
      this.nextGossipMs = nowMs + this.c.gossipIntervalMs;
    }
  }

  receive(packet: unknown, _channel: ChannelKind, nowMs: number): void {
    this.now = nowMs;
    const p = packet as HbPacket;
    this.learn(p.from);
    for (const v of p.verdicts) this.apply(v);
    if (p.type === 'hbReq') {
      this.send(p.from.addr, { type: 'hbRsp', from: this.self, seq: p.seq, verdicts: this.take() });
      return;
    }
    if (p.type === 'hbJoin') {
      const state: HbVerdict[] = [{ ...this.self, seq: 0, status: 'alive' }];
      for (const [name, m] of this.members)
        state.push({ name, addr: m.addr, epoch: m.epoch, seq: m.seq, status: m.status });
      this.send(p.from.addr, { type: 'hbWelcome', from: this.self, verdicts: state });
      return;
    }
    if (p.type !== 'hbRsp') return;
    const mon = this.monitored.get(p.from.name);
    if (mon === undefined || mon.epoch !== p.from.epoch) return;
    mon.firstExpectedMs = null;
    mon.detector.heartbeat(nowMs);
  }

  refused(): void {
    // Neither Akka nor a plain heartbeat timeout treats a refused port as evidence.
  }

  nextDeadlineMs(): number {
    let d = Math.min(this.nextHeartbeatMs, this.nextCheckMs);
    if (this.queue.size > 0) d = Math.min(d, this.nextGossipMs);
    return Math.max(d, this.now);
  }

  /** Monitor the first `monitors` alive ring successors, and keep watching those we convicted. */
  private syncMonitored(): void {
    const mine = key(this.self.name);
    const alive = [...this.members.entries()].filter(([, m]) => m.status === 'alive');
    alive.sort(
      ([an, a], [bn, b]) =>
        ringDistance(mine, a.ringKey) - ringDistance(mine, b.ringKey) || (an < bn ? -1 : 1),
    );
    const want = new Set(alive.slice(0, this.c.monitors).map(([n]) => n));
    for (const [name, mon] of this.monitored) {
      const m = this.members.get(name);
      const stale = m === undefined || m.epoch !== mon.epoch;
      if (stale || (!want.has(name) && !mon.dead)) this.monitored.delete(name);
    }
    for (const name of want) {
      if (this.monitored.has(name)) continue;
      const m = this.members.get(name) as HbMember;
      this.monitored.set(name, {
        detector: this.c.makeDetector(),
        epoch: m.epoch,
        seq: m.seq,
        firstExpectedMs: this.now + this.c.expectedResponseAfterMs,
        dead: false,
      });
    }
  }

  /** The reaper (Akka): re-evaluate every monitored peer. */
  private check(): void {
    for (const [name, mon] of this.monitored) {
      const m = this.members.get(name);
      if (m === undefined || m.epoch !== mon.epoch) continue;
      if (mon.firstExpectedMs !== null && this.now >= mon.firstExpectedMs) {
        mon.detector.heartbeat(mon.firstExpectedMs);
        mon.firstExpectedMs = null;
      }
      const available = mon.detector.isAvailable(this.now);
      if (!available && !mon.dead) {
        mon.dead = true;
        this.apply({ name, addr: m.addr, epoch: mon.epoch, seq: mon.seq, status: 'dead' }, true);
      } else if (available && mon.dead) {
        mon.dead = false;
        this.apply({ name, addr: m.addr, epoch: mon.epoch, seq: mon.seq, status: 'alive' }, true);
      }
    }
  }

  /** A packet from a member proves its life: a new one, or a new life, is alive. */
  private learn(f: HbFrom): void {
    if (f.name === this.self.name) return;
    const m = this.members.get(f.name);
    if (m === undefined || f.epoch > m.epoch) this.apply({ ...f, seq: 0, status: 'alive' });
  }

  /** Verdicts are ordered by (epoch, seq); at equal order `dead` wins; `own` always applies. */
  private apply(v: HbVerdict, own = false): void {
    if (v.name === this.self.name) return;
    const m = this.members.get(v.name);
    if (m === undefined) {
      this.members.set(v.name, {
        addr: v.addr,
        epoch: v.epoch,
        seq: v.seq,
        status: v.status,
        ringKey: key(v.name),
      });
      this.verdicts.push({ target: v.name, status: v.status, epoch: v.epoch });
      this.enqueue(v);
      return;
    }
    if (v.epoch < m.epoch) return;
    const newer = v.epoch > m.epoch || v.seq > m.seq;
    const tieDead = v.epoch === m.epoch && v.seq === m.seq && v.status === 'dead';
    if (!(own || newer || tieDead)) return;
    const newLife = v.epoch > m.epoch;
    m.seq = newLife ? v.seq : Math.max(m.seq, v.seq);
    m.epoch = v.epoch;
    m.addr = v.addr;
    if (m.status !== v.status || newLife) {
      m.status = v.status;
      this.verdicts.push({ target: v.name, status: v.status, epoch: v.epoch, own });
      this.enqueue(v);
    }
  }

  private enqueue(v: HbVerdict): void {
    this.queue.set(v.name, { v, sent: 0 });
    this.nextGossipMs = Math.max(this.nextGossipMs, this.now);
  }

  private take(): HbVerdict[] {
    if (this.queue.size === 0) return [];
    const limit = retransmitLimit(this.c.retransmitMult, this.members.size + 1);
    const out: HbVerdict[] = [];
    for (const [name, q] of this.queue) {
      out.push(q.v);
      if (++q.sent >= limit) this.queue.delete(name);
      if (out.length >= 20) break;
    }
    return out;
  }

  private randomAlive(k: number): string[] {
    const pool = [...this.members.values()].filter((m) => m.status === 'alive');
    const out: string[] = [];
    for (let i = 0; i < k && i < pool.length; i++) {
      const j = this.rng.int(i, pool.length);
      const t = pool[i] as HbMember;
      pool[i] = pool[j] as HbMember;
      pool[j] = t;
      out.push((pool[i] as HbMember).addr);
    }
    return out;
  }

  private send(to: string, packet: HbPacket): void {
    this.outbox.push({ to, packet, channel: 'udp', evidence: false });
  }
}

// -----------------------------------------------------------------------------------------------
// Cassandra: gossip of heartbeat versions, exponential φ at every node

interface Digest {
  readonly name: string;
  readonly addr: string;
  readonly gen: number;
  readonly ver: number;
}

type CassPacket =
  | { readonly type: 'syn'; readonly from: string; readonly digests: Digest[] }
  | {
      readonly type: 'ack';
      readonly from: string;
      readonly states: Digest[];
      readonly requests: string[];
    }
  | { readonly type: 'ack2'; readonly from: string; readonly states: Digest[] };

interface Endpoint {
  addr: string;
  gen: number;
  ver: number;
  up: boolean;
  readonly fd: PhiAccrualDetector;
}

export interface CassandraConfig {
  readonly gossipIntervalMs: number;
  /** cassandra.max_local_pause_in_ms: skip convictions after a local pause this long. */
  readonly maxLocalPauseMs: number;
}

class CassandraSimNode extends QueuedSimNode implements SimNode {
  private readonly eps = new Map<string, Endpoint>();
  private ver = 0;
  private nextGossipMs: number;
  private lastInterpretMs: number | null = null;
  private lastPauseMs = -Infinity;
  private readonly gen: number;
  private readonly rng: Prng;
  private now: number;

  constructor(
    ctx: NodeContext,
    private readonly c: CassandraConfig,
    private readonly self = ctx.name,
    private readonly selfAddr = ctx.addr,
  ) {
    super();
    this.gen = ctx.epoch;
    this.rng = ctx.rng;
    this.now = ctx.nowMs;
    this.nextGossipMs = ctx.nowMs + this.rng.next() * c.gossipIntervalMs;
    for (const r of ctx.roster) {
      if (r.name === ctx.name) continue;
      this.add(r.name, r.addr, -1, 0);
      this.verdicts.push({ target: r.name, status: 'alive' });
    }
  }

  start(seeds: readonly string[], nowMs: number): void {
    this.now = nowMs;
    for (const s of seeds.slice(0, 1))
      this.send(s, { type: 'syn', from: this.self, digests: this.digests() });
  }

  tick(nowMs: number): void {
    this.now = nowMs;
    if (nowMs < this.nextGossipMs) return;
    this.nextGossipMs = Math.max(this.nextGossipMs + this.c.gossipIntervalMs, nowMs);
    // Gossiper's task: beat our heart, gossip to a live endpoint (and sometimes to a down one),
    // then check the status of every endpoint.
    this.ver++;
    const live = [...this.eps.values()].filter((e) => e.up);
    const down = [...this.eps.values()].filter((e) => !e.up);
    if (live.length > 0)
      this.send(this.rng.pick(live).addr, {
        type: 'syn',
        from: this.self,
        digests: this.digests(),
      });
    if (down.length > 0 && this.rng.chance(down.length / (live.length + 1))) {
      this.send(this.rng.pick(down).addr, {
        type: 'syn',
        from: this.self,
        digests: this.digests(),
      });
    }
    this.interpretAll();
  }

  receive(packet: unknown, _channel: ChannelKind, nowMs: number): void {
    this.now = nowMs;
    const p = packet as CassPacket;
    const fromAddr = this.eps.get(p.from)?.addr;
    if (p.type === 'syn') {
      const states: Digest[] = [];
      const requests: string[] = [];
      const seen = new Set<string>();
      for (const d of p.digests) {
        seen.add(d.name);
        const mine = this.digestOf(d.name);
        if (mine === undefined || newer(d, mine)) requests.push(d.name);
        else if (newer(mine, d)) states.push(mine);
      }
      for (const d of this.digests()) if (!seen.has(d.name)) states.push(d);
      const back = fromAddr ?? p.digests.find((d) => d.name === p.from)?.addr;
      if (back !== undefined) this.send(back, { type: 'ack', from: this.self, states, requests });
    } else if (p.type === 'ack') {
      for (const d of p.states) this.applyState(d);
      const states = p.requests
        .map((n) => this.digestOf(n))
        .filter((d): d is Digest => d !== undefined);
      const back = this.eps.get(p.from)?.addr;
      if (back !== undefined) this.send(back, { type: 'ack2', from: this.self, states });
    } else {
      for (const d of p.states) this.applyState(d);
    }
  }

  refused(): void {
    // Cassandra convicts only through its failure detector.
  }

  nextDeadlineMs(): number {
    return Math.max(this.nextGossipMs, this.now);
  }

  private interpretAll(): void {
    // The local-pause guard: if our own check loop ran late by more than 5 s, convict no one for
    // the next 5 s (cassandra.max_local_pause_in_ms).
    const last = this.lastInterpretMs;
    this.lastInterpretMs = this.now;
    if (last !== null && this.now - last > this.c.maxLocalPauseMs) this.lastPauseMs = this.now;
    if (this.now - this.lastPauseMs < this.c.maxLocalPauseMs) return;
    for (const [name, e] of this.eps) {
      if (e.up && e.fd.lastHeartbeatMs !== undefined && !e.fd.isAvailable(this.now)) {
        e.up = false;
        this.verdicts.push({ target: name, status: 'dead', epoch: e.gen });
      }
    }
  }

  private applyState(d: Digest): void {
    if (d.name === this.self) return;
    const e = this.eps.get(d.name);
    if (e === undefined) {
      this.add(d.name, d.addr, d.gen, d.ver);
      (this.eps.get(d.name) as Endpoint).fd.heartbeat(this.now);
      return;
    }
    if (d.gen > e.gen) {
      e.fd.reset();
      e.gen = d.gen;
      e.ver = d.ver;
      e.addr = d.addr;
      e.up = false;
      this.report(d.name, e);
    } else if (d.gen === e.gen && d.ver > e.ver) {
      e.ver = d.ver;
      this.report(d.name, e);
    }
  }

  private report(name: string, e: Endpoint): void {
    e.fd.heartbeat(this.now);
    if (!e.up) {
      e.up = true;
      this.verdicts.push({ target: name, status: 'alive', epoch: e.gen });
    }
  }

  private add(name: string, addr: string, gen: number, ver: number): void {
    this.eps.set(name, {
      addr,
      gen,
      ver,
      up: true,
      fd: new PhiAccrualDetector(cassandraPhiConfig(this.c.gossipIntervalMs)),
    });
    if (gen >= 0) this.verdicts.push({ target: name, status: 'alive', epoch: gen });
  }

  private digestOf(name: string): Digest | undefined {
    if (name === this.self) return { name, addr: this.selfAddr, gen: this.gen, ver: this.ver };
    const e = this.eps.get(name);
    return e === undefined || e.gen < 0
      ? undefined
      : { name, addr: e.addr, gen: e.gen, ver: e.ver };
  }

  private digests(): Digest[] {
    const out: Digest[] = [{ name: this.self, addr: this.selfAddr, gen: this.gen, ver: this.ver }];
    for (const [name, e] of this.eps)
      if (e.gen >= 0) out.push({ name, addr: e.addr, gen: e.gen, ver: e.ver });
    return out;
  }

  private send(to: string, packet: CassPacket): void {
    this.outbox.push({ to, packet, channel: 'tcp', evidence: false });
  }
}

function newer(a: Digest, b: Digest): boolean {
  return a.gen > b.gen || (a.gen === b.gen && a.ver > b.ver);
}

function key(name: string): number {
  return fnvString(FNV_OFFSET, name);
}

function ringDistance(from: number, to: number): number {
  return (to - from + 0x100000000) % 0x100000000 || 0x100000000;
}

// -----------------------------------------------------------------------------------------------
// The roster of detectors

const gossipLike = { gossipIntervalMs: 200, gossipNodes: 3, retransmitMult: 4 };

export const DETECTORS: readonly DetectorSpec[] = [
  {
    name: 'tenure',
    description: 'SWIM + Lifeguard + ring watch (φ), P* = 3 s, evidence fast path, stall guard',
    create: (ctx) => new SwimSimNode(ctx, TENURE_LAN),
  },
  {
    name: 'memberlist',
    description: 'SWIM + Lifeguard, memberlist LAN defaults',
    create: (ctx) => new SwimSimNode(ctx, MEMBERLIST_LAN),
  },
  {
    name: 'swim',
    description: 'SWIM (DSN 2002): fixed suspicion timeout 4·log10(n)·1 s, no Lifeguard',
    create: (ctx) => new SwimSimNode(ctx, SWIM_PLAIN),
  },
  {
    name: 'akka-phi',
    description:
      'Akka φ: logistic, threshold 8, σ ≥ 100 ms, pause 3 s; 1 monitor, request/response at 1 s',
    create: (ctx) =>
      new HeartbeatSimNode(ctx, {
        heartbeatIntervalMs: 1000,
        monitors: 1,
        checkIntervalMs: 1000,
        expectedResponseAfterMs: 1000,
        ...gossipLike,
        makeDetector: () => new PhiAccrualDetector(akkaPhiConfig(1000)),
      }),
  },
  {
    name: 'fixed-timeout',
    description: 'Deadline = heartbeat 1 s + pause 3 s (k = 4); 1 monitor, request/response at 1 s',
    create: (ctx) =>
      new HeartbeatSimNode(ctx, {
        heartbeatIntervalMs: 1000,
        monitors: 1,
        checkIntervalMs: 1000,
        expectedResponseAfterMs: 1000,
        ...gossipLike,
        makeDetector: () =>
          new FixedTimeoutDetector({ heartbeatIntervalMs: 1000, k: 4, thresholdLevel: 8 }),
      }),
  },
  {
    name: 'cassandra-phi',
    description: 'Cassandra gossip 1 s, exponential φ > 8 (18.4 × mean), 5 s local-pause guard',
    create: (ctx) => new CassandraSimNode(ctx, { gossipIntervalMs: 1000, maxLocalPauseMs: 5000 }),
  },
];

export function detectorByName(name: string): DetectorSpec {
  const d = DETECTORS.find((x) => x.name === name);
  assert(d !== undefined, () => `unknown detector ${name}`);
  return d;
}
