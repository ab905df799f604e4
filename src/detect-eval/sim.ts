// A single-threaded discrete-event simulator for failure detectors: virtual time, one seeded PRNG
// stream per concern, a monotonic clock per node with its own offset and rate skew, a network per
// directed link (network.ts), and the node model of the fault catalogue — silent crash, crash with
// a closed port, stop-the-world pause, observer stall, slow message processing, isolation, one-way
// and UDP-only cuts, restart with the same name.
//
// A stopped node (SIGSTOP, or an event loop blocked) neither runs timers nor reads packets; the
// packets queue in its socket buffer. When it resumes, its timers run first and only then does it
// read the queue — the order Node's event loop uses, and the trap that makes an observer accuse
// everyone after its own stall.

import { assert, prng, type Prng } from '../core/base/index.js';
import type { DetectorSpec, SimNode } from './detectors.js';
import { EventQueue } from '../core/base/event-queue.js';
import { Recorder, type RunMetrics } from './metrics.js';
import { Network, type ChannelKind, type NetProfile } from './network.js';

export type Fault =
  | {
      readonly at: number;
      readonly kind: 'crash';
      readonly slot: number;
      /** The process exits and its port is closed (ICMP/RST on contact), or the host vanishes. */
      readonly evidence: boolean;
      /** Restart with the same name after this long; Infinity: stays down. */
      readonly downMs: number;
      readonly newAddr: boolean;
      /** Count this crash's detection time (false for crashes that are only part of a churn). */
      readonly measure: boolean;
    }
  | {
      readonly at: number;
      readonly kind: 'stop';
      readonly slot: number;
      readonly durationMs: number;
      readonly role: 'pause' | 'stall';
    }
  | {
      readonly at: number;
      readonly kind: 'isolate';
      readonly slot: number;
      readonly durationMs: number;
    }
  /** Cut `group` off from everyone else (both ways) for a while; the group counts as an outage. */
  | {
      readonly at: number;
      readonly kind: 'partition';
      readonly group: readonly number[];
      readonly durationMs: number;
    }
  | {
      readonly at: number;
      readonly kind: 'block';
      readonly from: number;
      readonly to: number;
      readonly channel: ChannelKind | 'all';
      readonly durationMs: number;
    }
  /** `slot` can reach only the peers not in `cut` (both ways), e.g. half of them. */
  | {
      readonly at: number;
      readonly kind: 'reach';
      readonly slot: number;
      readonly cut: readonly number[];
      readonly durationMs: number;
    }
  | { readonly at: number; readonly kind: 'slow'; readonly slot: number; readonly delayMs: number }
  | { readonly at: number; readonly kind: 'join'; readonly slot: number }
  | {
      readonly at: number;
      readonly kind: 'wallStep';
      readonly slot: number;
      readonly deltaMs: number;
    };

export interface SimConfig {
  /** Members started at the beginning. */
  readonly n: number;
  /** Further slots that `join` faults start later. */
  readonly extraSlots: number;
  readonly seed: number;
  readonly detector: DetectorSpec;
  readonly network: NetProfile;
  /** Time for the cluster to form before anything is measured, ms. */
  readonly warmupMs: number;
  /** Measured time, ms; fault times are relative to its start. */
  readonly durationMs: number;
  readonly faults: readonly Fault[];
  /** Largest monotonic clock rate error, ppm (each node draws one in ±skewPpm). */
  readonly skewPpm: number;
  /** Check convergence (every up member sees every other alive) from this time on; null: never. */
  readonly convergenceFromMs: number | null;
  /** Debugging: called with every verdict and fault, in simulator time. */
  readonly trace?: (t: number, line: string) => void;
}

export interface SimResult {
  readonly metrics: RunMetrics;
  readonly events: number;
  readonly wallSteps: number;
}

interface Proc {
  readonly slot: number;
  readonly name: string;
  addr: string;
  life: number;
  up: boolean;
  started: boolean;
  downEvidence: boolean;
  node: SimNode | null;
  stopped: boolean;
  queued: { packet: unknown; channel: ChannelKind }[];
  slowMs: number;
  busyUntil: number;
  tickAt: number;
  /** The node's own deadline behind tickAt, so the tick sees at least that time (rounding). */
  tickLocal: number;
  tickToken: number;
  /** The last local time handed to the node: never goes back. */
  lastLocal: number;
  readonly offset: number;
  readonly rate: number;
}

type Ev = { readonly t: number } & (
  | { readonly type: 'tick'; readonly slot: number; readonly token: number }
  | {
      readonly type: 'deliver';
      readonly to: string;
      readonly from: number;
      readonly fromLife: number;
      readonly packet: unknown;
      readonly channel: ChannelKind;
    }
  | {
      readonly type: 'process';
      readonly slot: number;
      readonly life: number;
      readonly packet: unknown;
      readonly channel: ChannelKind;
    }
  | {
      readonly type: 'refused';
      readonly slot: number;
      readonly life: number;
      readonly addr: string;
    }
  | { readonly type: 'fault'; readonly fault: Fault }
  | { readonly type: 'resume'; readonly slot: number }
  | { readonly type: 'heal'; readonly fault: Fault }
  | { readonly type: 'restart'; readonly slot: number; readonly newAddr: boolean }
  | { readonly type: 'converge' }
);

/** Socket buffer of a stopped process, in packets. */
const STOP_QUEUE_MAX = 5000;
/** Events one run may process; a livelock in a detector trips this. */
const EVENTS_MAX = 30_000_000;
const CONVERGE_CHECK_MS = 500;

export function addressOf(slot: number, life: number): string {
  return `10.${(slot >> 8) & 255}.${slot & 255}.1:${7946 + life}`;
}

export function nameOf(slot: number): string {
  return `n${slot}`;
}

export class Simulation {
  private readonly queue = new EventQueue();
  private readonly procs: Proc[] = [];
  private readonly byAddr = new Map<string, number>();
  private readonly byName = new Map<string, number>();
  private readonly net: Network;
  private readonly rec: Recorder;
  private readonly rng: Prng;
  private readonly nodeRng: Prng;
  private readonly slotCount: number;
  private now = 0;
  private events = 0;
  private wallSteps = 0;
  private convergeFrom: number | null;

  constructor(readonly config: SimConfig) {
    const root = prng(config.seed);
    this.rng = root.fork('sim');
    this.nodeRng = root.fork('nodes');
    this.slotCount = config.n + config.extraSlots;
    this.net = new Network(config.network, root, this.slotCount);
    this.rec = new Recorder(this.slotCount, config.trace);
    const clocks = root.fork('clocks');
    for (let i = 0; i < this.slotCount; i++) {
      const p: Proc = {
        slot: i,
        name: nameOf(i),
        addr: addressOf(i, 0),
        life: 0,
        up: false,
        started: false,
        downEvidence: false,
        node: null,
        stopped: false,
        queued: [],
        slowMs: 0,
        busyUntil: 0,
        tickAt: Infinity,
        tickLocal: 0,
        tickToken: 0,
        lastLocal: 0,
        offset: clocks.next() * 1e6,
        rate: 1 + ((clocks.next() * 2 - 1) * config.skewPpm) / 1e6,
      };
      this.procs.push(p);
      this.byName.set(p.name, i);
    }
    this.convergeFrom =
      config.convergenceFromMs === null ? null : config.warmupMs + config.convergenceFromMs;
  }

  run(): SimResult {
    const c = this.config;
    // Form the cluster: start the first n members over 2 s, each joining through earlier ones.
    const spread = Math.min(2000, c.warmupMs / 2);
    for (let i = 0; i < c.n; i++) {
      this.push({ t: (i * spread) / c.n, type: 'fault', fault: { at: 0, kind: 'join', slot: i } });
    }
    for (const f of c.faults) {
      this.push({ t: c.warmupMs + f.at, type: 'fault', fault: { ...f, at: c.warmupMs + f.at } });
    }
    if (this.convergeFrom !== null) this.push({ t: this.convergeFrom, type: 'converge' });
    const end = c.warmupMs + c.durationMs;
    let recording = false;
    for (let e = this.queue.pop(); e !== undefined && e.at <= end; e = this.queue.pop()) {
      if (!recording && e.at >= c.warmupMs) {
        this.rec.startRecording(c.warmupMs);
        recording = true;
      }
      this.now = e.at;
      assert(++this.events < EVENTS_MAX, 'simulation: event budget exhausted');
      e.fn();
    }
    if (!recording) this.rec.startRecording(c.warmupMs);
    return { metrics: this.rec.finish(end), events: this.events, wallSteps: this.wallSteps };
  }

  // ---------------------------------------------------------------------------------------------

  // Every event is scheduled at or after the current time, so the queue's clamp to now never
  // moves one; the evaluation hashes no events, hence tag 0.
  private push(e: Ev): void {
    this.queue.at(e.t, 0, () => this.dispatch(e));
  }

  private local(p: Proc, atLeast = 0): number {
    p.lastLocal = Math.max(p.lastLocal, atLeast, p.offset + this.now * p.rate);
    return p.lastLocal;
  }

  private dispatch(e: Ev): void {
    switch (e.type) {
      case 'tick': {
        const p = this.procs[e.slot] as Proc;
        if (e.token !== p.tickToken || !p.up || p.stopped) return;
        p.tickAt = Infinity;
        this.call(p, (n, now) => n.tick(now), p.tickLocal);
        return;
      }
      case 'deliver':
        this.deliver(e.to, e.from, e.fromLife, e.packet, e.channel);
        return;
      case 'process': {
        const p = this.procs[e.slot] as Proc;
        if (!p.up || p.life !== e.life) return;
        if (p.stopped) p.queued.push({ packet: e.packet, channel: e.channel });
        else this.call(p, (n, now) => n.receive(e.packet, e.channel, now));
        return;
      }
      case 'refused': {
        const p = this.procs[e.slot] as Proc;
        if (!p.up || p.life !== e.life || p.stopped) return;
        this.call(p, (n, now) => n.refused(e.addr, now));
        return;
      }
      case 'fault':
        this.fault(e.fault);
        return;
      case 'resume':
        this.resume(this.procs[e.slot] as Proc);
        return;
      case 'heal':
        this.heal(e.fault);
        return;
      case 'restart':
        this.rec.closeEpisode(e.slot, this.now);
        this.start(this.procs[e.slot] as Proc, e.newAddr);
        return;
      case 'converge':
        this.checkConvergence();
        return;
    }
  }

  private call(p: Proc, f: (n: SimNode, now: number) => void, atLeastLocal = 0): void {
    const n = p.node;
    if (n === null) return;
    f(n, this.local(p, atLeastLocal));
    this.flush(p, n);
  }

  private flush(p: Proc, n: SimNode): void {
    for (const s of n.takeOutbox()) {
      this.rec.packet();
      const to = this.byAddr.get(s.to);
      if (to === undefined) continue;
      const d = this.net.transit(this.now, p.slot, to, s.channel, this.slotCount);
      if (d === null) continue;
      this.push({
        t: this.now + d,
        type: 'deliver',
        to: s.to,
        from: p.slot,
        fromLife: p.life,
        packet: s.packet,
        channel: s.channel,
      });
    }
    for (const v of n.takeVerdicts()) {
      const x = this.byName.get(v.target);
      // A verdict about an earlier life of the name (epoch = life + 1) is not about the process
      // running now; the detector told the lives apart, so it is neither a mistake nor news.
      const stale =
        x !== undefined && v.epoch !== undefined && v.epoch !== (this.procs[x] as Proc).life + 1;
      if (x !== undefined && !stale)
        this.rec.verdict(this.now, p.slot, x, v.status, v.own !== false);
      this.config.trace?.(this.now, `${p.name} sees ${v.target} ${v.status}`);
    }
    for (const l of n.takeLinkVerdicts()) {
      const x = this.byName.get(l.target);
      if (x !== undefined) this.rec.link(this.now, p.slot, x, l.unreachable);
    }
    this.schedule(p, n);
  }

  private schedule(p: Proc, n: SimNode): void {
    const d = n.nextDeadlineMs();
    if (!Number.isFinite(d)) {
      p.tickAt = Infinity;
      p.tickToken++;
      return;
    }
    // Convert the node's local deadline to simulator time, never earlier than now.
    const t = Math.max(this.now, (d - p.offset) / p.rate);
    if (t === p.tickAt) return;
    p.tickAt = t;
    p.tickLocal = d;
    p.tickToken++;
    this.push({ t, type: 'tick', slot: p.slot, token: p.tickToken });
  }

  private deliver(
    addr: string,
    from: number,
    fromLife: number,
    packet: unknown,
    channel: ChannelKind,
  ): void {
    const slot = this.byAddr.get(addr);
    if (slot === undefined) return;
    const p = this.procs[slot] as Proc;
    if (!p.up) {
      if (p.downEvidence && p.addr === addr) {
        // The kernel answers for the dead process: ICMP port unreachable / RST.
        const d = this.net.transit(this.now, slot, from, 'udp', this.slotCount);
        if (d !== null)
          this.push({ t: this.now + d, type: 'refused', slot: from, life: fromLife, addr });
      }
      return;
    }
    if (p.addr !== addr) return;
    if (p.stopped) {
      if (p.queued.length < STOP_QUEUE_MAX) p.queued.push({ packet, channel });
      return;
    }
    if (p.slowMs > 0) {
      // A slow member (Lifeguard's failure mode): each packet waits D × U(0.5, 1.5) in the
      // receive queue before it is processed, first come first served.
      const at = Math.max(this.now + p.slowMs * (0.5 + this.rng.next()), p.busyUntil);
      p.busyUntil = at;
      this.push({ t: at, type: 'process', slot, life: p.life, packet, channel });
      return;
    }
    this.call(p, (n, now) => n.receive(packet, channel, now));
  }

  private start(p: Proc, newAddr: boolean): void {
    if (p.started) p.life++;
    p.started = true;
    if (newAddr || p.life === 0) {
      if (this.byAddr.get(p.addr) === p.slot) this.byAddr.delete(p.addr);
      p.addr = addressOf(p.slot, p.life);
    }
    this.byAddr.set(p.addr, p.slot);
    p.up = true;
    p.stopped = false;
    p.queued = [];
    p.busyUntil = 0;
    p.downEvidence = false;
    const roster: { name: string; addr: string }[] = [];
    for (let i = 0; i < this.config.n; i++) roster.push({ name: nameOf(i), addr: addressOf(i, 0) });
    p.node = this.config.detector.create({
      name: p.name,
      addr: p.addr,
      epoch: p.life + 1,
      rng: this.nodeRng.fork(`${p.slot}:${p.life}`),
      nowMs: this.local(p),
      roster,
    });
    this.rec.setUp(p.slot, true, this.now);
    const others = this.procs.filter((q) => q.up && q.slot !== p.slot);
    const seeds: string[] = [];
    for (let i = 0; i < 3 && others.length > 0; i++) {
      const j = this.rng.int(0, others.length);
      seeds.push((others[j] as Proc).addr);
      others.splice(j, 1);
    }
    this.call(p, (n, now) => n.start(seeds, now));
  }

  private fault(f: Fault): void {
    this.config.trace?.(this.now, `fault ${JSON.stringify(f)}`);
    switch (f.kind) {
      case 'join': {
        const p = this.procs[f.slot] as Proc;
        if (!p.up) this.start(p, false);
        return;
      }
      case 'crash': {
        const p = this.procs[f.slot] as Proc;
        if (!p.up) return;
        p.up = false;
        p.node = null;
        p.stopped = false;
        p.queued = [];
        p.downEvidence = f.evidence;
        p.tickToken++;
        this.rec.crash(p.slot, this.now, f.measure);
        if (Number.isFinite(f.downMs)) {
          this.push({ t: this.now + f.downMs, type: 'restart', slot: p.slot, newAddr: f.newAddr });
        }
        return;
      }
      case 'stop': {
        const p = this.procs[f.slot] as Proc;
        if (!p.up || p.stopped) return;
        p.stopped = true;
        this.rec.stopStart(p.slot, f.role, this.now);
        this.push({ t: this.now + f.durationMs, type: 'resume', slot: p.slot });
        return;
      }
      case 'isolate':
        this.net.isolated.add(f.slot);
        this.rec.stopStart(f.slot, 'outage', this.now);
        this.push({ t: this.now + f.durationMs, type: 'heal', fault: f });
        return;
      case 'partition': {
        const inGroup = new Set(f.group);
        for (const a of f.group) {
          this.rec.stopStart(a, 'outage', this.now);
          for (let b = 0; b < this.slotCount; b++) {
            if (inGroup.has(b)) continue;
            this.net.block(a, b, 'all');
            this.net.block(b, a, 'all');
          }
        }
        this.push({ t: this.now + f.durationMs, type: 'heal', fault: f });
        return;
      }
      case 'reach':
        for (const b of f.cut) {
          this.net.block(f.slot, b, 'all');
          this.net.block(b, f.slot, 'all');
        }
        this.rec.setDegraded(f.slot, true, this.now);
        this.push({ t: this.now + f.durationMs, type: 'heal', fault: f });
        return;
      case 'block':
        this.net.block(f.from, f.to, f.channel);
        this.rec.setDegraded(f.from, true, this.now);
        this.rec.setDegraded(f.to, true, this.now);
        this.rec.cutStart(f.from, f.to, this.now);
        this.push({ t: this.now + f.durationMs, type: 'heal', fault: f });
        return;
      case 'slow':
        (this.procs[f.slot] as Proc).slowMs = f.delayMs;
        this.rec.setDegraded(f.slot, true, this.now);
        return;
      case 'wallStep':
        // Every detector here reads only its monotonic clock, so a wall-clock step changes nothing
        // it sees; the step is counted to show the scenario ran.
        this.wallSteps++;
        return;
    }
  }

  private heal(f: Fault): void {
    if (f.kind === 'isolate') {
      this.net.isolated.delete(f.slot);
      this.rec.stopEnd(f.slot, this.now);
    } else if (f.kind === 'partition') {
      const inGroup = new Set(f.group);
      for (const a of f.group) {
        this.rec.stopEnd(a, this.now);
        for (let b = 0; b < this.slotCount; b++) {
          if (inGroup.has(b)) continue;
          this.net.unblock(a, b, 'all');
          this.net.unblock(b, a, 'all');
        }
      }
    } else if (f.kind === 'reach') {
      for (const b of f.cut) {
        this.net.unblock(f.slot, b, 'all');
        this.net.unblock(b, f.slot, 'all');
      }
      this.rec.setDegraded(f.slot, false, this.now);
    } else if (f.kind === 'block') {
      this.net.unblock(f.from, f.to, f.channel);
      this.rec.setDegraded(f.from, false, this.now);
      this.rec.setDegraded(f.to, false, this.now);
    }
  }

  private resume(p: Proc): void {
    if (!p.up || !p.stopped) return;
    p.stopped = false;
    this.rec.stopEnd(p.slot, this.now);
    // Timers first, then the packets that queued in the socket buffer.
    this.call(p, (n, now) => n.tick(now));
    const q = p.queued;
    p.queued = [];
    for (const m of q) this.call(p, (n, now) => n.receive(m.packet, m.channel, now));
  }

  private checkConvergence(): void {
    const ups = this.procs.filter((p) => p.up).map((p) => p.slot);
    if (this.rec.converged(ups)) {
      this.rec.setConvergence(this.now - (this.convergeFrom as number));
      return;
    }
    this.push({ t: this.now + CONVERGE_CHECK_MS, type: 'converge' });
  }
}
