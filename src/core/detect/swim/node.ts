// The state of one SWIM member, shared by the modules that act on it, and the primitives they all
// use: the packet header with its piggybacked updates (SWIM §4.1's infection-style
// dissemination), the outbox, probe sequence numbers and random member selection. Each concern
// is a module of functions over this state (member-table.ts, gossip.ts, ping.ts, accusation.ts,
// ring-watch.ts, probe.ts, updates.ts, stall-guard.ts); swim.ts wraps it in the public Swim
// class. Nothing outside this folder sees it.

import type { Prng } from '../../base/index.js';
import type { PhiAccrualDetector } from '../phi-accrual.js';
import { Awareness } from './awareness.js';
import { BroadcastQueue, retransmitLimit } from './broadcast-queue.js';
import { SWIM_LIMITS, validateSwimConfig, type SwimConfig } from './config.js';
import type { FlapDamper } from './flap-damper.js';
import type { Address, Channel, MemberStatus, Packet, Send, Sender, Update } from './messages.js';
import { ProbeOrder } from './probe-order.js';
import type { Suspicion } from './suspicion.js';

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

export interface Member {
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

export type ProbeKind = 'probe' | 'alarm';

export interface Probe {
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

export interface Relay {
  readonly requester: Address;
  readonly requesterSeq: number;
  readonly nackAtMs: number;
  readonly expireAtMs: number;
  nacked: boolean;
}

export interface Watched {
  readonly detector: PhiAccrualDetector;
  epoch: number;
  nextAlarmMs: number;
}

export type Awaiting =
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

/** Tolerance on comparing our contact time with an accuser's, for delivery time, ms. */
export const FRESHNESS_MARGIN_MS = 50;

export class SwimNode {
  readonly name: string;
  readonly config: SwimConfig;
  readonly addr: Address;
  readonly epoch: number;
  inc = 0;
  leftAtMs: number | null = null;
  readonly rng: Prng;
  readonly members = new Map<string, Member>();
  readonly byAddr = new Map<Address, string>();
  readonly order: ProbeOrder;
  readonly queue = new BroadcastQueue(SWIM_LIMITS.broadcastQueueMax);
  readonly awareness: Awareness;
  readonly awaiting = new Map<number, Awaiting>();
  readonly relays = new Map<number, Relay>();
  readonly watched = new Map<string, Watched>();
  readonly avoidWatchers = new Map<string, number>();
  readonly suspects = new Set<string>();
  readonly suppressed = new Set<string>();
  outbox: Send[] = [];
  events: SwimEvent[] = [];
  seq = 0;
  probe: Probe | null = null;
  readonly alarms = new Map<string, Probe>();
  nextProbeMs: number;
  nextGossipMs: number;
  lastGossipRoundMs = -Infinity;
  nextPushPullMs: number;
  nextHeartbeatMs: number;
  watcher: string | null = null;
  ringDirty = true;
  liveCount = 0;
  dueMs = Infinity;
  /** A stall was just detected: the next tick must come after one round of I/O. */
  awaitIo = false;
  now: number;

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

  selfAlive(): Update {
    return { type: 'alive', name: this.name, addr: this.addr, epoch: this.epoch, inc: this.inc };
  }

  sender(): Sender {
    return { name: this.name, addr: this.addr, epoch: this.epoch, inc: this.inc };
  }

  /** Header and piggybacked updates for a packet; `buddy` names a member whose news goes first. */
  base(buddy?: string): { from: Sender; updates: Update[] } {
    const limit = retransmitLimit(this.config.retransmitMult, this.liveCount + 1);
    return {
      from: this.sender(),
      updates: this.queue.take(this.config.piggybackMax, limit, this.now, buddy),
    };
  }

  push(to: Address, packet: Packet, channel: Channel = 'udp', evidence = false): void {
    this.outbox.push({ to, packet, channel, evidence });
  }

  nextSeq(): number {
    this.seq = (this.seq + 1) % 0x7fffffff;
    return this.seq;
  }

  /** Up to `k` distinct random members satisfying `ok` (a partial Fisher–Yates over candidates). */
  pickMembers(k: number, ok: (m: Member) => boolean): Member[] {
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
}

/** Alive or suspect: a member still probed and counted as up (SWIM §4.2). */
export function live(m: Member): boolean {
  return m.status === 'alive' || m.status === 'suspect';
}
