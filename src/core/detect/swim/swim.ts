// The SWIM membership protocol as a pure state machine: packets, refusals and the time go in
// (`receive`, `refused`, `tick`, all with `nowMs`); packets to send and membership events come out
// (`takeOutbox`, `takeEvents`); `nextDeadlineMs` says when to call `tick` again. The UDP runtime
// (src/membership) and the evaluation harness (src/detect-eval) drive the same code.
//
// What it implements, with the section it follows:
// - probes in shuffled round-robin order, ping-req through k relays, suspicion with incarnation
//   numbers and refutation, infection-style dissemination with a retransmit limit (SWIM §4);
// - Lifeguard (arXiv 1707.00788 §IV): nacks, the local health multiplier, suspicion timeouts that
//   shrink with independent confirmations, the buddy system;
// - memberlist's push/pull state exchange and TCP fallback ping (its state.go and net.go);
// - tenure's additions, each behind a config switch: a ring watch with one-way heartbeats judged
//   by φ accrual; `dead` no earlier than P* after the target could have stopped; refused ports as
//   evidence; the stall guard; fresher contact overruling a `dead` rumor; link-level
//   unreachability; re-asserting `dead` to a member that missed it; flap damping; epochs, so a
//   restart with the same name is a new life at once.

import { assert, fnvString, FNV_OFFSET, type Prng } from '../../base/index.js';
import { PhiAccrualDetector, type PhiAccrualConfig } from '../phi-accrual.js';
import { phiNormalTail } from '../phi-formula.js';
import { Awareness } from './awareness.js';
import { BroadcastQueue, retransmitLimit } from './broadcast-queue.js';
import { SWIM_LIMITS, validateSwimConfig, type SwimConfig } from './config.js';
import { FlapDamper } from './flap-damper.js';
import type { Address, Channel, MemberStatus, Packet, Send, Sender, Update } from './messages.js';
import { ProbeOrder } from './probe-order.js';
import { expectedConfirmations, Suspicion, suspicionMinMs } from './suspicion.js';

/** What the membership layer reports. Status events carry the visible (damped) status. */
export type SwimEvent =
  | {
      readonly type: MemberStatus;
      readonly name: string;
      readonly addr: Address;
      readonly epoch: number;
      readonly inc: number;
      readonly atMs: number;
      /** Who accused, for suspect and dead; the reason, for dead. */
      readonly by?: string;
      readonly reason?: 'timeout' | 'evidence' | 'rumor';
    }
  | {
      readonly type: 'unreachable' | 'reachable';
      readonly name: string;
      readonly atMs: number;
      readonly channel: Channel | 'all';
    }
  | { readonly type: 'stall'; readonly durationMs: number; readonly atMs: number };

/** One member as the application sees it. */
export interface MemberView {
  readonly name: string;
  readonly addr: Address;
  readonly epoch: number;
  readonly inc: number;
  /** The visible status (held at `suspect` while flap-damped). */
  readonly status: MemberStatus;
  /** The protocol's own status. */
  readonly protocolStatus: MemberStatus;
  readonly lastHeardMs: number | null;
  readonly linkUnreachable: boolean;
  readonly damped: boolean;
}

interface Member {
  readonly name: string;
  readonly ringKey: number;
  addr: Address;
  epoch: number;
  inc: number;
  status: MemberStatus;
  visible: MemberStatus;
  statusSinceMs: number;
  lastHeardMs: number;
  suspicion: Suspicion | null;
  ownSuspicion: boolean;
  nextBuddyMs: number;
  evidenceAtMs: number;
  linkDown: boolean;
  reassertAtMs: number;
  damper: FlapDamper | null;
}

type ProbeKind = 'probe' | 'alarm';

interface Probe {
  readonly kind: ProbeKind;
  readonly target: string;
  readonly seq: number;
  readonly sentMs: number;
  directDeadlineMs: number;
  deadlineMs: number;
  indirect: boolean;
  expectedNacks: number;
  readonly nacks: Set<string>;
  /** Relays asked in the indirect phase. */
  relays: number;
}

interface Relay {
  readonly requester: Address;
  readonly requesterSeq: number;
  readonly nackAtMs: number;
  readonly expireAtMs: number;
  nacked: boolean;
}

interface Watched {
  readonly detector: PhiAccrualDetector;
  epoch: number;
  nextAlarmMs: number;
}

type Awaiting =
  | { readonly kind: 'probe'; readonly probe: Probe }
  | { readonly kind: 'alarm'; readonly probe: Probe }
  | { readonly kind: 'buddy'; readonly target: string }
  | { readonly kind: 'evidence'; readonly target: string };

export interface SwimOptions {
  readonly name: string;
  readonly addr: Address;
  /** This life of the process; a restart must use a higher one when epochIdentity is on. */
  readonly epoch: number;
  readonly config: SwimConfig;
  readonly rng: Prng;
  readonly nowMs: number;
}

const EVIDENCE_WINDOW_MS = 2000;
const REASSERT_INTERVAL_MS = 1000;
const AVOID_WATCHER_MS = 60_000;
const RELAY_EXPIRE_FACTOR = 3;

export class Swim {
  readonly name: string;
  readonly config: SwimConfig;
  private readonly addr: Address;
  private readonly epoch: number;
  private inc = 0;
  private leftAtMs: number | null = null;
  private readonly rng: Prng;
  private readonly members = new Map<string, Member>();
  private readonly byAddr = new Map<Address, string>();
  private readonly order: ProbeOrder;
  private readonly queue = new BroadcastQueue(SWIM_LIMITS.broadcastQueueMax);
  private readonly awareness: Awareness;
  private readonly awaiting = new Map<number, Awaiting>();
  private readonly relays = new Map<number, Relay>();
  private readonly watched = new Map<string, Watched>();
  private readonly avoidWatchers = new Map<string, number>();
  private readonly suspects = new Set<string>();
  private readonly suppressed = new Set<string>();
  private outbox: Send[] = [];
  private events: SwimEvent[] = [];
  private seq = 0;
  private probe: Probe | null = null;
  private readonly alarms = new Map<string, Probe>();
  private nextProbeMs: number;
  private nextGossipMs: number;
  private lastGossipRoundMs = -Infinity;
  private nextPushPullMs: number;
  private nextHeartbeatMs: number;
  private watcher: string | null = null;
  private ringDirty = true;
  private liveCount = 0;
  private dueMs = Infinity;
  /** A stall was just detected: the next tick must come after one round of I/O. */
  private awaitIo = false;
  private now: number;

  constructor(opts: SwimOptions) {
    this.config = validateSwimConfig(opts.config);
    this.name = opts.name;
    this.addr = opts.addr;
    this.epoch = opts.epoch;
    this.rng = opts.rng;
    this.now = opts.nowMs;
    this.order = new ProbeOrder(opts.rng.fork('probe-order'));
    this.awareness = new Awareness(this.config.awarenessMax);
    // Spread the phases of the periodic tasks so members do not act in lockstep.
    const c = this.config;
    this.nextProbeMs = opts.nowMs + this.rng.next() * c.probeIntervalMs;
    this.nextGossipMs = opts.nowMs + this.rng.next() * c.gossipIntervalMs;
    this.nextPushPullMs =
      c.pushPullIntervalMs > 0
        ? opts.nowMs + (0.5 + this.rng.next()) * c.pushPullIntervalMs
        : Infinity;
    this.nextHeartbeatMs =
      c.watch === null ? Infinity : opts.nowMs + this.rng.next() * c.watch.heartbeatIntervalMs;
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs

  /** Join through seed addresses: a full state exchange with each (memberlist's join). */
  join(seeds: readonly Address[], nowMs: number): void {
    this.enter(nowMs);
    this.queue.enqueue(this.selfAlive(), nowMs);
    this.kickGossip();
    for (const seed of seeds.slice(0, 3)) {
      if (seed === this.addr) continue;
      this.push(
        seed,
        { type: 'pushPull', reply: false, state: this.state(), ...this.base() },
        'tcp',
      );
    }
    this.leave_();
  }

  /** Leave gracefully: announce `left` and stop probing. The runtime lingers to let it spread. */
  leave(nowMs: number): void {
    this.enter(nowMs);
    if (this.leftAtMs === null) {
      this.leftAtMs = nowMs;
      this.queue.enqueue(
        { type: 'left', name: this.name, epoch: this.epoch, inc: this.inc },
        nowMs,
      );
      this.nextGossipMs = nowMs;
      this.gossip();
    }
    this.leave_();
  }

  tick(nowMs: number): void {
    const stalled = this.enter(nowMs);
    if (!stalled) this.awaitIo = false;
    if (this.leftAtMs === null) {
      this.heartbeat();
      if (!this.awaitIo) {
        this.stepProbe();
        this.stepAlarms();
        this.stepRelays();
        this.stepSuspicions();
        this.stepBuddies();
      }
      this.stepPushPull();
      this.stepDamping();
    }
    this.gossip();
    this.leave_();
  }

  receive(packet: Packet, channel: Channel, nowMs: number): void {
    this.enter(nowMs);
    this.hear(packet.from);
    for (const u of packet.updates) this.apply(u, packet.from.name, false);
    if (this.leftAtMs === null || packet.type === 'pushPull') this.handle(packet, channel);
    this.leave_();
  }

  /** The transport saw a refused port (ICMP port unreachable, ECONNREFUSED) at `addr`. */
  refused(addr: Address, nowMs: number): void {
    this.enter(nowMs);
    const name = this.byAddr.get(addr);
    const m = name === undefined ? undefined : this.members.get(name);
    if (this.config.evidence && this.leftAtMs === null && m !== undefined && live(m)) {
      if (m.evidenceAtMs > -Infinity && nowMs - m.evidenceAtMs <= EVIDENCE_WINDOW_MS) {
        if (nowMs > m.evidenceAtMs) this.declareDead(m, 'evidence', m.evidenceAtMs);
      } else {
        // One refusal could be a firewall's reject or a restart in progress: confirm on both
        // channels before believing it.
        m.evidenceAtMs = nowMs;
        const seq = this.nextSeq();
        this.awaiting.set(seq, { kind: 'evidence', target: m.name });
        this.push(m.addr, { type: 'ping', seq, target: m.name, ...this.base() }, 'udp', true);
        this.push(m.addr, { type: 'ping', seq, target: m.name, ...this.base() }, 'tcp', true);
      }
    }
    this.leave_();
  }

  // ---------------------------------------------------------------------------------------------
  // Outputs

  takeOutbox(): Send[] {
    const out = this.outbox;
    this.outbox = [];
    return out;
  }

  takeEvents(): SwimEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  /** When `tick` must run next (local monotonic ms); the current time if it must run now. */
  nextDeadlineMs(): number {
    return this.dueMs;
  }

  get localHealth(): number {
    return this.awareness.health;
  }

  get incarnation(): number {
    return this.inc;
  }

  get selfEpoch(): number {
    return this.epoch;
  }

  /** The member this node heartbeats to (tenure's watch), if any. */
  get currentWatcher(): string | null {
    return this.watcher;
  }

  memberList(): MemberView[] {
    return [...this.members.values()].map((m) => this.view(m));
  }

  member(name: string): MemberView | undefined {
    const m = this.members.get(name);
    return m === undefined ? undefined : this.view(m);
  }

  /**
   * The suspicion level of a member on the φ scale (level.ts): the watch's φ while alive, at least
   * 8 + confirmations while suspected, Infinity once dead or left.
   */
  level(name: string, nowMs: number): number {
    const m = this.members.get(name);
    if (m === undefined) return 0;
    if (m.visible === 'dead' || m.visible === 'left') return Infinity;
    const w = this.watched.get(name);
    const phi = w === undefined ? 0 : w.detector.level(nowMs);
    if (m.visible === 'suspect') return Math.max(phi, 8 + (m.suspicion?.confirmations ?? 0));
    return phi;
  }

  // ---------------------------------------------------------------------------------------------
  // Time and the stall guard

  /** Called at the start of every input. Returns whether we were just stalled. */
  private enter(nowMs: number): boolean {
    assert(nowMs >= this.now, () => `swim ${this.name}: time went back ${this.now} → ${nowMs}`);
    this.now = nowMs;
    const late = nowMs - this.dueMs;
    const threshold = this.config.stallThresholdMs;
    if (threshold > 0 && Number.isFinite(this.dueMs) && late > threshold) {
      this.onStall(late);
      this.dueMs = nowMs;
      this.awaitIo = true;
      return true;
    }
    return false;
  }

  /**
   * We did not run for `durationMs` (event loop blocked, process paused). Timeouts that expired
   * meanwhile say nothing about the peers: we could not hear them. So: drop the probes in flight
   * without a verdict, push every suspicion and watch clock back by the stall, raise our local
   * health multiplier, and keep this tick quiet so one round of I/O runs before any verdict
   * (after a long block Node runs expired timers before it polls for I/O; Cassandra's local-pause
   * guard in gms/FailureDetector.java, generalised).
   */
  private onStall(durationMs: number): void {
    this.events.push({ type: 'stall', durationMs, atMs: this.now });
    this.awareness.apply(1);
    for (const [seq, a] of this.awaiting) {
      if (a.kind === 'probe' || a.kind === 'alarm') this.awaiting.delete(seq);
    }
    this.probe = null;
    this.alarms.clear();
    this.relays.clear();
    this.nextProbeMs = Math.max(this.nextProbeMs, this.now);
    for (const w of this.watched.values()) {
      w.detector.shift(durationMs);
      w.nextAlarmMs = Math.max(w.nextAlarmMs, this.now);
    }
    for (const name of this.suspects) this.members.get(name)?.suspicion?.postpone(durationMs);
  }

  /** Finish an input: recompute the next deadline. */
  private leave_(): void {
    assert(this.outbox.length <= SWIM_LIMITS.outboxMax, 'swim: outbox overflow');
    assert(this.awaiting.size <= SWIM_LIMITS.awaitingMax + 8, 'swim: awaiting overflow');
    this.dueMs = this.computeDeadline();
  }

  private computeDeadline(): number {
    if (this.awaitIo) return this.now;
    let d = Infinity;
    const gossipDue = this.queue.size > 0 ? this.nextGossipMs : Infinity;
    d = Math.min(d, gossipDue);
    if (this.leftAtMs !== null) return d;
    if (this.liveCount > 0) {
      d = Math.min(d, this.nextProbeMs, this.nextPushPullMs);
      if (this.watcher !== null) d = Math.min(d, this.nextHeartbeatMs);
    }
    const p = this.probe;
    if (p !== null) d = Math.min(d, p.indirect ? p.deadlineMs : p.directDeadlineMs);
    for (const a of this.alarms.values())
      d = Math.min(d, a.indirect ? a.deadlineMs : a.directDeadlineMs);
    for (const r of this.relays.values()) d = Math.min(d, r.nacked ? r.expireAtMs : r.nackAtMs);
    for (const name of this.suspects) {
      const m = this.members.get(name);
      if (m?.suspicion) {
        d = Math.min(d, m.suspicion.deadlineMs());
        if (m.ownSuspicion && this.config.suspicion === 'tenure') d = Math.min(d, m.nextBuddyMs);
      }
    }
    for (const [name, w] of this.watched)
      if (this.alarmable(name)) d = Math.min(d, this.alarmDueMs(w));
    for (const name of this.suppressed) {
      d = Math.min(d, this.members.get(name)?.damper?.releaseAtMs() ?? Infinity);
    }
    return Math.max(d, this.now);
  }

  // ---------------------------------------------------------------------------------------------
  // Probing (SWIM §4.1, §4.3; Lifeguard §IV.A)

  private stepProbe(): void {
    const p = this.probe;
    if (p !== null) this.advanceProbe(p);
    if (this.probe === null && this.now >= this.nextProbeMs) this.startProbe();
  }

  private startProbe(): void {
    const c = this.config;
    const interval = c.probeIntervalMs * (this.awareness.health + 1);
    this.nextProbeMs = this.now + interval;
    const target = this.order.next((n) => {
      const m = this.members.get(n);
      return m !== undefined && live(m);
    });
    if (target === undefined) return;
    const m = this.members.get(target) as Member;
    this.probe = this.sendProbe('probe', m);
  }

  private sendProbe(kind: ProbeKind, m: Member): Probe {
    const c = this.config;
    const timeout = c.awarenessScalesTimeout
      ? this.awareness.scale(c.probeTimeoutMs)
      : c.probeTimeoutMs;
    // memberlist lets the indirect phase run until the (scaled) probe interval ends.
    const deadline = this.awareness.scale(c.probeDeadlineMs);
    const seq = this.nextSeq();
    const probe: Probe = {
      kind,
      target: m.name,
      seq,
      sentMs: this.now,
      directDeadlineMs: this.now + timeout,
      deadlineMs: this.now + Math.max(deadline, timeout),
      indirect: false,
      expectedNacks: 0,
      nacks: new Set(),
      relays: 0,
    };
    this.awaiting.set(seq, kind === 'probe' ? { kind: 'probe', probe } : { kind: 'alarm', probe });
    const buddy = c.buddy && m.status === 'suspect' ? m.name : undefined;
    this.push(m.addr, { type: 'ping', seq, target: m.name, ...this.base(buddy) }, 'udp');
    return probe;
  }

  private advanceProbe(p: Probe): void {
    if (!p.indirect && this.now >= p.directDeadlineMs) this.goIndirect(p);
    if (p.indirect && this.now >= p.deadlineMs) this.finishProbe(p, 'none');
  }

  private goIndirect(p: Probe): void {
    p.indirect = true;
    const c = this.config;
    const m = this.members.get(p.target);
    if (m === undefined) return;
    const relays = this.pickMembers(
      c.indirectChecks,
      (x) => x.name !== p.target && x.status === 'alive',
    );
    for (const r of relays) {
      this.push(r.addr, {
        type: 'pingReq',
        seq: p.seq,
        target: m.name,
        targetAddr: m.addr,
        ...this.base(),
      });
    }
    p.expectedNacks = c.nack ? relays.length : 0;
    p.relays = relays.length;
    if (c.tcpFallback) {
      this.push(m.addr, { type: 'ping', seq: p.seq, target: m.name, ...this.base() }, 'tcp');
    }
  }

  private onAck(seq: number, from: Sender, channel: Channel, watcher: string | null): void {
    const relay = this.relays.get(seq);
    if (relay !== undefined) {
      this.relays.delete(seq);
      this.push(relay.requester, { type: 'ack', seq: relay.requesterSeq, watcher, ...this.base() });
      return;
    }
    const a = this.awaiting.get(seq);
    if (a === undefined) return;
    if (a.kind === 'buddy' || a.kind === 'evidence') {
      this.awaiting.delete(seq);
      const m = this.members.get(a.target);
      if (m !== undefined) m.evidenceAtMs = -Infinity;
      return;
    }
    const p = a.probe;
    const direct = from.name === p.target;
    this.finishProbe(p, direct ? channel : 'indirect');
    if (p.kind === 'alarm' && direct && watcher !== this.name) this.watched.delete(p.target);
  }

  private onNack(seq: number, from: Sender): void {
    const a = this.awaiting.get(seq);
    if (a !== undefined && (a.kind === 'probe' || a.kind === 'alarm')) a.probe.nacks.add(from.name);
  }

  /** A probe ends: acked directly over UDP or TCP, through a relay, or not at all. */
  private finishProbe(p: Probe, outcome: Channel | 'indirect' | 'none'): void {
    this.awaiting.delete(p.seq);
    if (p.kind === 'probe') {
      if (this.probe === p) this.probe = null;
    } else if (this.alarms.get(p.target) === p) {
      this.alarms.delete(p.target);
    }
    const m = this.members.get(p.target);
    if (outcome !== 'none') {
      this.awareness.apply(-1);
      if (m !== undefined) this.noteLink(m, outcome);
      if (p.kind === 'alarm') {
        const w = this.watched.get(p.target);
        if (outcome === 'udp') w?.detector.touch(this.now);
        else if (m !== undefined && this.config.linkUnreachable) this.releaseWatch(m);
      }
      return;
    }
    // Lifeguard §IV.A: a failed probe, and each probe with missing nacks, raise the multiplier.
    // tenure: when every relay nacked, the relays have shown that we hear them and the target is
    // silent to them too; the failure says nothing about our own health, so it costs nothing.
    const allNacked = p.expectedNacks > 0 && p.nacks.size >= p.expectedNacks;
    let delta = 1;
    if (p.expectedNacks > p.nacks.size) delta += 1;
    if (this.config.suspicion === 'tenure' && allNacked) delta = 0;
    if (m === undefined || !live(m)) {
      this.awareness.apply(delta);
      return;
    }
    let silentSince = p.sentMs;
    const w = this.watched.get(m.name);
    const hb = this.config.watch?.heartbeatIntervalMs;
    if (w !== undefined && hb !== undefined && w.detector.lastHeartbeatMs !== undefined) {
      silentSince = Math.min(silentSince, w.detector.lastHeartbeatMs + hb);
    }
    // Corroborated: every relay answered, and each said the target did not answer it either. A
    // node cut off from the others gets silence from its relays instead, and must not convict.
    const corroborated =
      p.relays === 0 ? this.liveCount < 2 : allNacked && p.nacks.size >= p.relays;
    this.suspect(m, silentSince, p.nacks, corroborated);
    this.awareness.apply(delta);
  }

  /** Link-level reachability (tenure): answered only through relays means the link is cut. */
  private noteLink(m: Member, outcome: Channel | 'indirect'): void {
    if (!this.config.linkUnreachable) return;
    const down = outcome !== 'udp';
    if (down !== m.linkDown) {
      m.linkDown = down;
      this.events.push({
        type: down ? 'unreachable' : 'reachable',
        name: m.name,
        atMs: this.now,
        channel: outcome === 'tcp' ? 'udp' : 'all',
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Relaying (ping-req) and answering

  private handle(p: Packet, channel: Channel): void {
    switch (p.type) {
      case 'ping':
        if (p.target === this.name) {
          this.push(
            p.from.addr,
            { type: 'ack', seq: p.seq, watcher: this.watcher, ...this.base() },
            channel,
          );
        }
        return;
      case 'ack':
        this.onAck(p.seq, p.from, channel, p.watcher);
        return;
      case 'nack':
        this.onNack(p.seq, p.from);
        return;
      case 'pingReq':
        this.relay(p.from.addr, p.seq, p.target, p.targetAddr);
        return;
      case 'heartbeat':
        this.onHeartbeat(p.from, p.handoff);
        return;
      case 'release':
        this.avoidWatchers.set(p.from.name, this.now + AVOID_WATCHER_MS);
        this.ringDirty = true;
        return;
      case 'gossip':
        return;
      case 'pushPull':
        for (const u of p.state) this.apply(u, p.from.name, true);
        if (!p.reply) {
          this.push(
            p.from.addr,
            { type: 'pushPull', reply: true, state: this.state(), ...this.base() },
            'tcp',
          );
        }
        return;
    }
  }

  private relay(
    requester: Address,
    requesterSeq: number,
    target: string,
    targetAddr: Address,
  ): void {
    if (this.relays.size >= SWIM_LIMITS.relaysMax) return;
    const seq = this.nextSeq();
    const c = this.config;
    this.relays.set(seq, {
      requester,
      requesterSeq,
      nackAtMs: this.now + 0.8 * c.probeTimeoutMs,
      expireAtMs: this.now + RELAY_EXPIRE_FACTOR * c.probeTimeoutMs,
      nacked: !c.nack,
    });
    this.push(targetAddr, { type: 'ping', seq, target, ...this.base() });
  }

  private stepRelays(): void {
    for (const [seq, r] of this.relays) {
      if (!r.nacked && this.now >= r.nackAtMs) {
        r.nacked = true;
        this.push(r.requester, { type: 'nack', seq: r.requesterSeq, ...this.base() });
      }
      if (this.now >= r.expireAtMs) this.relays.delete(seq);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The ring watch (tenure): one-way heartbeats, judged by φ accrual at the watcher

  private heartbeat(): void {
    const w = this.config.watch;
    if (w === null) return;
    if (this.ringDirty) this.recomputeWatcher();
    if (this.watcher === null || this.now < this.nextHeartbeatMs) return;
    const m = this.members.get(this.watcher);
    if (m !== undefined)
      this.push(m.addr, { type: 'heartbeat', handoff: false, ...this.base() }, 'udp', true);
    this.nextHeartbeatMs += w.heartbeatIntervalMs;
    if (this.nextHeartbeatMs <= this.now) this.nextHeartbeatMs = this.now + w.heartbeatIntervalMs;
  }

  private recomputeWatcher(): void {
    this.ringDirty = false;
    for (const [name, until] of this.avoidWatchers)
      if (until <= this.now) this.avoidWatchers.delete(name);
    const mine = ringKeyOf(this.name);
    let best: Member | null = null;
    let first: Member | null = null;
    for (const m of this.members.values()) {
      if (m.status !== 'alive' || this.avoidWatchers.has(m.name)) continue;
      if (first === null || ringLess(m, first)) first = m;
      if (ringAfter(m, mine, this.name) && (best === null || ringLess(m, best))) best = m;
    }
    const next = (best ?? first)?.name ?? null;
    if (next !== this.watcher) {
      const old = this.watcher === null ? undefined : this.members.get(this.watcher);
      if (old !== undefined && old.status === 'alive') {
        this.push(old.addr, { type: 'heartbeat', handoff: true, ...this.base() }, 'udp');
      }
      this.watcher = next;
      if (this.config.watch !== null && old === undefined) {
        this.nextHeartbeatMs = Math.min(this.nextHeartbeatMs, this.now);
      }
    }
  }

  private onHeartbeat(from: Sender, handoff: boolean): void {
    const wc = this.config.watch;
    if (wc === null) return;
    if (handoff) {
      this.watched.delete(from.name);
      return;
    }
    let w = this.watched.get(from.name);
    if (w === undefined) {
      if (this.watched.size >= SWIM_LIMITS.watchedMax) return;
      w = {
        detector: new PhiAccrualDetector(watchPhiConfig(wc)),
        epoch: from.epoch,
        nextAlarmMs: 0,
      };
      this.watched.set(from.name, w);
    }
    if (w.epoch !== from.epoch) {
      w.detector.reset();
      w.epoch = from.epoch;
    }
    w.detector.heartbeat(this.now);
  }

  private alarmDueMs(w: Watched): number {
    const wc = this.config.watch;
    if (wc === null || w.detector.lastHeartbeatMs === undefined) return Infinity;
    // φ is monotone in the silence: solve for the time it crosses the alarm level.
    const crossing = w.detector.lastHeartbeatMs + this.alarmSilenceMs(w);
    return Math.max(crossing, w.nextAlarmMs);
  }

  private alarmSilenceMs(w: Watched): number {
    const wc = this.config.watch as NonNullable<SwimConfig['watch']>;
    // Invert the normal φ: silence = mean + pause + y·σ with −log10 Q(y) = alarmPhi.
    const sd = Math.max(w.detector.stdDevMs, wc.minStdDevMs);
    return w.detector.meanMs + wc.alarmPauseMs + normalQuantileForPhi(wc.alarmPhi) * sd;
  }

  /** No alarm while one is in flight or while we already accuse the member ourselves. */
  private alarmable(name: string): boolean {
    const m = this.members.get(name);
    return m !== undefined && !this.alarms.has(name) && !(m.status === 'suspect' && m.ownSuspicion);
  }

  private stepAlarms(): void {
    const wc = this.config.watch;
    if (wc === null) return;
    for (const a of [...this.alarms.values()]) {
      if (!a.indirect && this.now >= a.directDeadlineMs) this.goIndirect(a);
      if (a.indirect && this.now >= a.deadlineMs) this.finishProbe(a, 'none');
    }
    for (const [name, w] of this.watched) {
      const m = this.members.get(name);
      if (m === undefined || !live(m) || m.epoch !== w.epoch) {
        this.watched.delete(name);
        continue;
      }
      if (!this.alarmable(name) || this.now < this.alarmDueMs(w)) continue;
      if (this.alarms.size >= SWIM_LIMITS.watchedMax) break;
      w.nextAlarmMs = this.now + 2 * wc.heartbeatIntervalMs;
      this.alarms.set(name, this.sendProbe('alarm', m));
    }
  }

  /** We cannot hear `m` directly: tell it to heartbeat elsewhere, and stop watching it. */
  private releaseWatch(m: Member): void {
    this.watched.delete(m.name);
    this.push(m.addr, { type: 'release', ...this.base() }, 'udp');
    this.push(m.addr, { type: 'release', ...this.base() }, 'tcp');
  }

  // ---------------------------------------------------------------------------------------------
  // Suspicion and death (SWIM §4.2; Lifeguard §IV.B; tenure's P* bound)

  /** This node's own accusation, from a failed probe or alarm. */
  private suspect(
    m: Member,
    silentSinceMs: number,
    nacks: ReadonlySet<string>,
    corroborated: boolean,
  ): void {
    // tenure counts relays that nacked as independent confirmations: each is a live member that
    // tried the target and failed. memberlist uses nacks only for its local health.
    const tenure = this.config.suspicion === 'tenure';
    const confirmers = tenure ? nacks : new Set<string>();
    const old = m.status === 'suspect' ? m.suspicion : null;
    const s = this.newSuspicion(this.name, silentSinceMs, true);
    s.corroborated = corroborated;
    for (const n of confirmers) s.confirm(n);
    if (old !== null) {
      // Already suspected. SWIM counts us as one more accuser. tenure takes its own evidence over a
      // rumor's when its bound is tighter, and announces once its own probe is corroborated.
      if (!tenure || m.ownSuspicion) {
        for (const n of confirmers) old.confirm(n);
        old.confirm(this.name);
        if (tenure && corroborated && !old.corroborated) {
          old.corroborated = true;
          this.announce(m, old);
        }
        return;
      }
      for (const a of old.accusers()) s.confirm(a);
      m.ownSuspicion = true;
      m.nextBuddyMs = this.now;
      if (s.deadlineMs() < old.deadlineMs()) {
        m.suspicion = s;
      } else {
        for (const n of confirmers) old.confirm(n);
        if (corroborated) old.corroborated = true;
      }
      if (corroborated) this.announce(m, m.suspicion ?? s);
      return;
    }
    this.startSuspicion(m, s, true);
    // tenure keeps an uncorroborated suspicion to itself (it pings the target, which refutes if it
    // hears): a cut-off or slow observer then cannot start a gossip storm of false accusations.
    // It asks other relays once at once, so a lost nack does not delay the verdict.
    if (!tenure || corroborated) this.announce(m, s);
    else this.verify(m);
  }

  /** Probe `m` once more through fresh relays, to corroborate our own suspicion. */
  private verify(m: Member): void {
    if (this.alarms.has(m.name) || this.alarms.size >= SWIM_LIMITS.watchedMax) return;
    this.alarms.set(m.name, this.sendProbe('alarm', m));
  }

  private announce(m: Member, s: Suspicion): void {
    this.queue.enqueue(this.accusation('suspect', m, s.silentSinceMs, 'timeout'), this.now);
    this.kickGossip();
  }

  private newSuspicion(accuser: string, silentSinceMs: number, own: boolean): Suspicion {
    const c = this.config;
    const n = this.liveCount + 1;
    if (c.suspicion === 'fixed') {
      const t = suspicionMinMs(c.suspicionMult, n, c.probeIntervalMs);
      return new Suspicion(this.now, t, t, 0, accuser, silentSinceMs);
    }
    if (c.suspicion === 'lifeguard') {
      const min = suspicionMinMs(c.suspicionMult, n, c.probeIntervalMs);
      const k = expectedConfirmations(c.suspicionMult, n);
      return new Suspicion(this.now, min, min * c.suspicionMaxMult, k, accuser, silentSinceMs);
    }
    // tenure: never before P* + slack after the target could first have stopped; the accuser
    // decides, those who only heard the rumor wait a little longer as a backup.
    const bound = silentSinceMs + c.pauseToleranceMs + c.deadSlackMs - this.now;
    let min = Math.max(c.minSuspectMs, bound);
    if (!own) min += c.rumorBackupMs;
    // An announced accusation was already corroborated by its author's relays, so a rumor starts
    // at the minimum; our own suspicion waits for confirmations as Lifeguard's does.
    const k = own ? expectedConfirmations(c.suspicionMult, n) : 0;
    return new Suspicion(this.now, min, min * c.suspicionMaxMult, k, accuser, silentSinceMs);
  }

  private startSuspicion(m: Member, s: Suspicion, own: boolean): void {
    m.suspicion = s;
    m.ownSuspicion = own;
    m.nextBuddyMs = this.now;
    this.suspects.add(m.name);
    this.setStatus(m, 'suspect', own ? this.name : s.firstAccuser, 'timeout');
  }

  private stepSuspicions(): void {
    for (const name of [...this.suspects]) {
      const m = this.members.get(name);
      const s = m?.suspicion;
      if (m === undefined || s === null || s === undefined || m.status !== 'suspect') {
        this.suspects.delete(name);
        continue;
      }
      if (this.now < s.deadlineMs()) continue;
      const c = this.config;
      if (c.suspicion === 'tenure' && m.lastHeardMs > s.silentSinceMs + FRESHNESS_MARGIN_MS) {
        // Veto: the target spoke to us after the silence began, so it was not stopped then. If it
        // stopped since, it stopped after that contact: start over from now, with a probe of our
        // own (the buddy ping reminds it to refute, the probe bounds the stop) and a full P*.
        const fresh = this.newSuspicion(this.name, this.now, true);
        m.suspicion = fresh;
        m.ownSuspicion = true;
        m.nextBuddyMs = this.now;
        this.verify(m);
        continue;
      }
      if (c.suspicion === 'tenure' && !s.corroborated) {
        // No verdict on our own word alone: probe once more, through relays, and convict only if
        // they all answer that the target is silent to them too. A cut-off observer never gets
        // there.
        this.verify(m);
        s.postpone(c.probeDeadlineMs * (this.awareness.health + 1));
        continue;
      }
      this.declareDead(m, 'timeout', s.silentSinceMs);
    }
  }

  /** tenure's buddy pings: while we accuse a member, ping it with the accusation every period. */
  private stepBuddies(): void {
    if (this.config.suspicion !== 'tenure') return;
    for (const name of this.suspects) {
      const m = this.members.get(name);
      if (m === undefined || !m.ownSuspicion || this.now < m.nextBuddyMs) continue;
      m.nextBuddyMs = this.now + this.config.probeIntervalMs;
      const seq = this.nextSeq();
      if (this.awaiting.size < SWIM_LIMITS.awaitingMax)
        this.awaiting.set(seq, { kind: 'buddy', target: name });
      this.push(m.addr, { type: 'ping', seq, target: name, ...this.base(name) }, 'udp');
    }
  }

  private declareDead(m: Member, reason: 'timeout' | 'evidence', silentSinceMs: number): void {
    this.clearSuspicion(m);
    this.setStatus(m, 'dead', this.name, reason);
    this.queue.enqueue(this.accusation('dead', m, silentSinceMs, reason), this.now);
    this.kickGossip();
  }

  private accusation(
    type: 'suspect' | 'dead',
    m: Member,
    silentSinceMs: number,
    reason: 'timeout' | 'evidence',
  ): Update {
    return {
      type,
      name: m.name,
      epoch: m.epoch,
      inc: m.inc,
      from: this.name,
      silentForMs: Math.max(0, this.now - silentSinceMs),
      reason,
    };
  }

  private clearSuspicion(m: Member): void {
    m.suspicion = null;
    m.ownSuspicion = false;
    this.suspects.delete(m.name);
  }

  // ---------------------------------------------------------------------------------------------
  // Updates: the precedence rules of SWIM §4.2, with epochs for restarts

  /** Every packet proves its sender alive at its epoch and incarnation. */
  private hear(s: Sender): void {
    if (s.name === this.name) return;
    const m = this.members.get(s.name);
    if (m === undefined || s.epoch > m.epoch || (s.epoch === m.epoch && s.inc > m.inc)) {
      this.apply(
        { type: 'alive', name: s.name, addr: s.addr, epoch: s.epoch, inc: s.inc },
        s.name,
        false,
      );
    }
    const now = this.members.get(s.name);
    if (now === undefined || now.epoch !== s.epoch) return;
    now.lastHeardMs = this.now;
    if (this.config.reassertDead && now.status === 'dead') {
      if (this.now >= now.reassertAtMs) {
        // It does not know we hold it dead; tell it so it refutes (the fix memberlist#311 lacks).
        now.reassertAtMs = this.now + REASSERT_INTERVAL_MS;
        const u: Update = {
          type: 'dead',
          name: now.name,
          epoch: now.epoch,
          inc: now.inc,
          from: this.name,
          silentForMs: 0,
          reason: 'timeout',
        };
        this.push(now.addr, { type: 'gossip', from: this.sender(), updates: [u] });
      }
    }
  }

  /** Apply one update. `fromPushPull`: memberlist trusts a remote `dead` only as a suspicion. */
  private apply(u: Update, via: string, fromPushPull: boolean): void {
    if (u.name === this.name) {
      this.applyAboutSelf(u);
      return;
    }
    const m = this.members.get(u.name);
    switch (u.type) {
      case 'alive':
        this.applyAlive(m, u);
        return;
      case 'suspect':
      case 'dead':
        if (m === undefined || u.epoch !== m.epoch || u.inc < m.inc) return;
        if (u.type === 'dead' && !fromPushPull) this.applyDead(m, u);
        else this.applySuspect(m, u);
        return;
      case 'left':
        if (m === undefined || u.epoch !== m.epoch || u.inc < m.inc || m.status === 'left') return;
        this.clearSuspicion(m);
        m.inc = u.inc;
        this.setStatus(m, 'left', via, undefined);
        this.queue.enqueue(u, this.now);
        this.kickGossip();
        return;
    }
  }

  private applyAboutSelf(u: Update): void {
    if (u.type === 'alive' || u.epoch !== this.epoch || u.inc < this.inc) return;
    if (this.leftAtMs !== null) return;
    // Refute (SWIM §4.2): a higher incarnation overrides the accusation everywhere.
    this.inc = u.inc + 1;
    this.awareness.apply(1);
    this.queue.enqueue(this.selfAlive(), this.now);
    this.kickGossip();
  }

  private applyAlive(m: Member | undefined, u: Extract<Update, { type: 'alive' }>): void {
    if (m === undefined) {
      if (this.members.size >= SWIM_LIMITS.membersMax) return;
      this.addMember(u);
      this.queue.enqueue(u, this.now);
      this.kickGossip();
      return;
    }
    const newLife = u.epoch > m.epoch;
    if (!newLife && (u.epoch < m.epoch || u.inc <= m.inc)) return;
    this.clearSuspicion(m);
    if (newLife) {
      m.epoch = u.epoch;
      m.lastHeardMs = -Infinity;
      m.evidenceAtMs = -Infinity;
      this.watched.delete(m.name);
    }
    m.inc = u.inc;
    if (u.addr !== m.addr) {
      if (this.byAddr.get(m.addr) === m.name) this.byAddr.delete(m.addr);
      m.addr = u.addr;
      this.byAddr.set(u.addr, m.name);
    }
    if (newLife && m.visible === 'alive') {
      // The old life ended unseen; show the new one as a fresh arrival.
      this.emitStatus(m, 'alive', undefined, undefined);
    }
    this.setStatus(m, 'alive', undefined, undefined);
    this.queue.enqueue(u, this.now);
    this.kickGossip();
  }

  private applySuspect(m: Member, u: Extract<Update, { type: 'suspect' | 'dead' }>): void {
    if (m.status === 'dead' || m.status === 'left') return;
    if (m.status === 'suspect' && m.suspicion !== null && u.inc === m.inc) {
      // An independent confirmation (Lifeguard §IV.B); re-gossip it so others count it too.
      if (m.suspicion.confirm(u.from)) {
        this.queue.enqueue({ ...u, type: 'suspect' }, this.now);
        this.kickGossip();
      }
      return;
    }
    m.inc = u.inc;
    this.clearSuspicion(m);
    const s = this.newSuspicion(u.from, this.now - u.silentForMs, false);
    this.startSuspicion(m, s, false);
    this.queue.enqueue({ ...u, type: 'suspect' }, this.now);
    this.kickGossip();
  }

  private applyDead(m: Member, u: Extract<Update, { type: 'suspect' | 'dead' }>): void {
    if (m.status === 'dead' || m.status === 'left') return;
    if (this.awaitIo && this.config.stallThresholdMs > 0) {
      // Read from the socket buffer right after our own stall: this news may be as old as the
      // stall, and newer news may follow in the same round. Hold it as a suspicion.
      this.applySuspect(m, u);
      return;
    }
    if (
      this.config.deadRumorCheck &&
      m.lastHeardMs > this.now - u.silentForMs + FRESHNESS_MARGIN_MS
    ) {
      // We heard from it after the accuser's silence began: the accuser's view is stale or cut
      // off. Suspect instead, and let the target refute.
      this.applySuspect(m, { ...u, silentForMs: 0 });
      m.nextBuddyMs = this.now;
      m.ownSuspicion = true;
      return;
    }
    this.clearSuspicion(m);
    m.inc = u.inc;
    this.setStatus(m, 'dead', u.from, u.reason === 'evidence' ? 'evidence' : 'rumor');
    this.queue.enqueue(u, this.now);
    this.kickGossip();
  }

  private addMember(u: Extract<Update, { type: 'alive' }>): void {
    const m: Member = {
      name: u.name,
      ringKey: ringKeyOf(u.name),
      addr: u.addr,
      epoch: u.epoch,
      inc: u.inc,
      status: 'alive',
      visible: 'alive',
      statusSinceMs: this.now,
      lastHeardMs: -Infinity,
      suspicion: null,
      ownSuspicion: false,
      nextBuddyMs: 0,
      evidenceAtMs: -Infinity,
      linkDown: false,
      reassertAtMs: 0,
      damper: this.config.flapDamping === null ? null : new FlapDamper(this.config.flapDamping),
    };
    this.members.set(u.name, m);
    this.byAddr.set(u.addr, u.name);
    this.order.add(u.name);
    this.liveCount++;
    this.ringDirty = true;
    this.emitStatus(m, 'alive', undefined, undefined);
  }

  private setStatus(
    m: Member,
    status: MemberStatus,
    by: string | undefined,
    reason: 'timeout' | 'evidence' | 'rumor' | undefined,
  ): void {
    if (m.status === status) return;
    const wasLive = live(m);
    const prev = m.status;
    m.status = status;
    m.statusSinceMs = this.now;
    const isLive = live(m);
    if (wasLive !== isLive) {
      this.liveCount += isLive ? 1 : -1;
      this.ringDirty = true;
    }
    if (status === 'alive' || prev === 'alive') this.ringDirty = true;
    if (prev === 'alive' && m.damper !== null && m.damper.flap(this.now))
      this.suppressed.add(m.name);
    const visible: MemberStatus =
      status === 'alive' && m.damper?.suppressed === true ? 'suspect' : status;
    if (visible !== m.visible) this.emitStatus(m, visible, by, reason);
  }

  private emitStatus(
    m: Member,
    visible: MemberStatus,
    by: string | undefined,
    reason: 'timeout' | 'evidence' | 'rumor' | undefined,
  ): void {
    m.visible = visible;
    this.events.push({
      type: visible,
      name: m.name,
      addr: m.addr,
      epoch: m.epoch,
      inc: m.inc,
      atMs: this.now,
      ...(by === undefined ? {} : { by }),
      ...(reason === undefined ? {} : { reason }),
    });
  }

  private stepDamping(): void {
    for (const name of [...this.suppressed]) {
      const m = this.members.get(name);
      if (m === undefined || m.damper === null) {
        this.suppressed.delete(name);
        continue;
      }
      if (m.damper.release(this.now)) {
        this.suppressed.delete(name);
        if (m.status === 'alive' && m.visible !== 'alive')
          this.emitStatus(m, 'alive', undefined, undefined);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Dissemination (SWIM §4.1; memberlist's gossip and push/pull)

  private kickGossip(): void {
    if (this.config.eagerGossip) {
      // As soon as there is news, but never more often than one round per gossip interval.
      const earliest = Math.max(this.now, this.lastGossipRoundMs + this.config.gossipIntervalMs);
      this.nextGossipMs = Math.min(this.nextGossipMs, earliest);
    } else if (this.nextGossipMs < this.now) {
      // Keep the gossip period's grid: the next round is the next multiple of the interval.
      const i = this.config.gossipIntervalMs;
      this.nextGossipMs += Math.ceil((this.now - this.nextGossipMs) / i) * i;
    }
  }

  private gossip(): void {
    if (this.now < this.nextGossipMs) return;
    const c = this.config;
    if (this.queue.size > 0) {
      const targets = this.pickMembers(
        c.gossipNodes,
        (m) => live(m) || (m.status === 'dead' && this.now - m.statusSinceMs < c.gossipToTheDeadMs),
      );
      for (const t of targets) {
        if (this.queue.size === 0) break;
        this.push(t.addr, { type: 'gossip', ...this.base() });
      }
      this.lastGossipRoundMs = this.now;
    }
    this.nextGossipMs = this.now + c.gossipIntervalMs;
  }

  private stepPushPull(): void {
    const c = this.config;
    if (this.now < this.nextPushPullMs || c.pushPullIntervalMs <= 0) return;
    const n = this.liveCount + 1;
    // memberlist's pushPullScale: the interval grows with log2(n) above 32 members.
    const scale = n <= 32 ? 1 : Math.ceil(Math.log2(n) - Math.log2(32)) + 1;
    this.nextPushPullMs = this.now + c.pushPullIntervalMs * scale;
    const [peer] = this.pickMembers(1, (m) => m.status === 'alive');
    if (peer !== undefined) {
      this.push(
        peer.addr,
        { type: 'pushPull', reply: false, state: this.state(), ...this.base() },
        'tcp',
      );
    }
  }

  private state(): Update[] {
    const out: Update[] = [this.selfAlive()];
    for (const m of this.members.values()) {
      if (m.status === 'alive') {
        out.push({ type: 'alive', name: m.name, addr: m.addr, epoch: m.epoch, inc: m.inc });
      } else if (m.status === 'left') {
        out.push({ type: 'left', name: m.name, epoch: m.epoch, inc: m.inc });
      } else {
        const since = m.suspicion?.silentSinceMs ?? m.statusSinceMs;
        out.push(this.accusation(m.status, m, since, 'timeout'));
      }
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private selfAlive(): Update {
    return { type: 'alive', name: this.name, addr: this.addr, epoch: this.epoch, inc: this.inc };
  }

  private sender(): Sender {
    return { name: this.name, addr: this.addr, epoch: this.epoch, inc: this.inc };
  }

  /** Header and piggybacked updates for a packet; `buddy` names a member whose news goes first. */
  private base(buddy?: string): { from: Sender; updates: Update[] } {
    const limit = retransmitLimit(this.config.retransmitMult, this.liveCount + 1);
    return {
      from: this.sender(),
      updates: this.queue.take(this.config.piggybackMax, limit, this.now, buddy),
    };
  }

  private push(to: Address, packet: Packet, channel: Channel = 'udp', evidence = false): void {
    this.outbox.push({ to, packet, channel, evidence });
  }

  private nextSeq(): number {
    this.seq = (this.seq + 1) % 0x7fffffff;
    return this.seq;
  }

  /** Up to `k` distinct random members satisfying `ok` (a partial Fisher–Yates over candidates). */
  private pickMembers(k: number, ok: (m: Member) => boolean): Member[] {
    const pool: Member[] = [];
    for (const m of this.members.values()) if (ok(m)) pool.push(m);
    const out: Member[] = [];
    for (let i = 0; i < k && i < pool.length; i++) {
      const j = this.rng.int(i, pool.length);
      const t = pool[i] as Member;
      pool[i] = pool[j] as Member;
      pool[j] = t;
      out.push(pool[i] as Member);
    }
    return out;
  }

  private view(m: Member): MemberView {
    return {
      name: m.name,
      addr: m.addr,
      epoch: m.epoch,
      inc: m.inc,
      status: m.visible,
      protocolStatus: m.status,
      lastHeardMs: Number.isFinite(m.lastHeardMs) ? m.lastHeardMs : null,
      linkUnreachable: m.linkDown,
      damped: m.damper?.suppressed ?? false,
    };
  }
}

/** Tolerance on comparing our contact time with an accuser's, for delivery time, ms. */
const FRESHNESS_MARGIN_MS = 50;

function live(m: Member): boolean {
  return m.status === 'alive' || m.status === 'suspect';
}

export function ringKeyOf(name: string): number {
  return fnvString(FNV_OFFSET, name);
}

function ringLess(a: Member, b: Member): boolean {
  return a.ringKey < b.ringKey || (a.ringKey === b.ringKey && a.name < b.name);
}

function ringAfter(m: Member, key: number, name: string): boolean {
  return m.ringKey > key || (m.ringKey === key && m.name > name);
}

/** The watch φ detector: exact normal tail, the alarm pause folded into the threshold search. */
export function watchPhiConfig(w: NonNullable<SwimConfig['watch']>): PhiAccrualConfig {
  return {
    model: 'normal',
    threshold: w.alarmPhi,
    windowSize: w.windowSize,
    minStdDevMs: w.minStdDevMs,
    acceptablePauseMs: w.alarmPauseMs,
    bootstrapIntervalsMs: [w.heartbeatIntervalMs * 0.9, w.heartbeatIntervalMs * 1.1],
    maxRecordedIntervalMs: 2 * w.heartbeatIntervalMs,
    skipIntervalWhenUnavailable: true,
  };
}

const quantileCache = new Map<number, number>();

/** The y at which −log10 Q(y) = phi, for the normal tail (cached; phi is a config constant). */
export function normalQuantileForPhi(phi: number): number {
  const hit = quantileCache.get(phi);
  if (hit !== undefined) return hit;
  let lo = -10;
  let hi = 40;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (phiNormalTail(mid) >= phi) hi = mid;
    else lo = mid;
  }
  quantileCache.set(phi, hi);
  return hi;
}
