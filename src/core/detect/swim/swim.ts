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
//
// The state lives in node.ts; each concern is a module of functions over it: member-table.ts,
// updates.ts, gossip.ts, ping.ts, probe.ts, accusation.ts, ring-watch.ts and stall-guard.ts.
// This class is the public face: the inputs, the outputs and the reads.

import { declareDead, stepBuddies, stepSuspicions } from './accusation.js';
import type { SwimConfig } from './config.js';
import { gossip, kickGossip, stepPushPull, state } from './gossip.js';
import type { Address, Channel, Packet, Send } from './messages.js';
import { stepDamping, view, type MemberView } from './member-table.js';
import { live, SwimNode, type SwimEvent, type SwimOptions } from './node.js';
import { relay, stepRelays } from './ping.js';
import { onAck, onNack, stepAlarms, stepProbe } from './probe.js';
import { heartbeat, onHeartbeat, onRelease } from './ring-watch.js';
import { enter, finishInput } from './stall-guard.js';
import { apply, hear } from './updates.js';

export type { MemberView } from './member-table.js';
export type { SwimEvent, SwimOptions } from './node.js';
export { ringKeyOf } from './member-table.js';
export { normalQuantileForPhi, watchPhiConfig } from './ring-watch.js';

const EVIDENCE_WINDOW_MS = 2000;

export class Swim {
  readonly name: string;
  readonly config: SwimConfig;
  private readonly node: SwimNode;

  constructor(opts: SwimOptions) {
    this.node = new SwimNode(opts);
    this.name = this.node.name;
    this.config = this.node.config;
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs

  /** Join through seed addresses: a full state exchange with each (memberlist's join). */
  join(seeds: readonly Address[], nowMs: number): void {
    enter(this.node, nowMs);
    this.node.queue.enqueue(this.node.selfAlive(), nowMs);
    kickGossip(this.node);
    for (const seed of seeds.slice(0, 3)) {
      if (seed === this.node.addr) continue;
      this.node.push(
        seed,
        { type: 'pushPull', reply: false, state: state(this.node), ...this.node.base() },
        'tcp',
      );
    }
    finishInput(this.node);
  }

  /** Leave gracefully: announce `left` and stop probing. The runtime lingers to let it spread. */
  leave(nowMs: number): void {
    enter(this.node, nowMs);
    if (this.node.leftAtMs === null) {
      this.node.leftAtMs = nowMs;
      this.node.queue.enqueue(
        { type: 'left', name: this.node.name, epoch: this.node.epoch, inc: this.node.inc },
        nowMs,
      );
      this.node.nextGossipMs = nowMs;
      gossip(this.node);
    }
    finishInput(this.node);
  }

  tick(nowMs: number): void {
    const stalled = enter(this.node, nowMs);
    if (!stalled) this.node.awaitIo = false;
    if (this.node.leftAtMs === null) {
      heartbeat(this.node);
      if (!this.node.awaitIo) {
        stepProbe(this.node);
        stepAlarms(this.node);
        stepRelays(this.node);
        stepSuspicions(this.node);
        stepBuddies(this.node);
      }
      stepPushPull(this.node);
      stepDamping(this.node);
    }
    gossip(this.node);
    finishInput(this.node);
  }

  receive(packet: Packet, channel: Channel, nowMs: number): void {
    enter(this.node, nowMs);
    hear(this.node, packet.from);
    for (const u of packet.updates) apply(this.node, u, packet.from.name, false);
    if (this.node.leftAtMs === null || packet.type === 'pushPull') this.handle(packet, channel);
    finishInput(this.node);
  }

  /** The transport saw a refused port (ICMP port unreachable, ECONNREFUSED) at `addr`. */
  refused(addr: Address, nowMs: number): void {
    enter(this.node, nowMs);
    const name = this.node.byAddr.get(addr);
    const m = name === undefined ? undefined : this.node.members.get(name);
    if (this.node.config.evidence && this.node.leftAtMs === null && m !== undefined && live(m)) {
      if (m.evidenceAtMs > -Infinity && nowMs - m.evidenceAtMs <= EVIDENCE_WINDOW_MS) {
        if (nowMs > m.evidenceAtMs) declareDead(this.node, m, 'evidence', m.evidenceAtMs);
      } else {
        // One refusal could be a firewall's reject or a restart in progress: confirm on both
        // channels before believing it.
        m.evidenceAtMs = nowMs;
        const seq = this.node.nextSeq();
        this.node.awaiting.set(seq, { kind: 'evidence', target: m.name });
        this.node.push(
          m.addr,
          { type: 'ping', seq, target: m.name, ...this.node.base() },
          'udp',
          true,
        );
        this.node.push(
          m.addr,
          { type: 'ping', seq, target: m.name, ...this.node.base() },
          'tcp',
          true,
        );
      }
    }
    finishInput(this.node);
  }

  // ---------------------------------------------------------------------------------------------
  // Outputs

  takeOutbox(): Send[] {
    const out = this.node.outbox;
    this.node.outbox = [];
    return out;
  }

  takeEvents(): SwimEvent[] {
    const out = this.node.events;
    this.node.events = [];
    return out;
  }

  /** When `tick` must run next (local monotonic ms); the current time if it must run now. */
  nextDeadlineMs(): number {
    return this.node.dueMs;
  }

  get localHealth(): number {
    return this.node.awareness.health;
  }

  get incarnation(): number {
    return this.node.inc;
  }

  get selfEpoch(): number {
    return this.node.epoch;
  }

  /** The member this node heartbeats to (tenure's watch), if any. */
  get currentWatcher(): string | null {
    return this.node.watcher;
  }

  memberList(): MemberView[] {
    return [...this.node.members.values()].map((m) => view(this.node, m));
  }

  member(name: string): MemberView | undefined {
    const m = this.node.members.get(name);
    return m === undefined ? undefined : view(this.node, m);
  }

  /**
   * The suspicion level of a member on the φ scale (level.ts): the watch's φ while alive, at least
   * 8 + confirmations while suspected, Infinity once dead or left.
   */
  level(name: string, nowMs: number): number {
    const m = this.node.members.get(name);
    if (m === undefined) return 0;
    if (m.visible === 'dead' || m.visible === 'left') return Infinity;
    const w = this.node.watched.get(name);
    const phi = w === undefined ? 0 : w.detector.level(nowMs);
    if (m.visible === 'suspect') return Math.max(phi, 8 + (m.suspicion?.confirmations ?? 0));
    return phi;
  }

  // ---------------------------------------------------------------------------------------------
  // Answering pings, and handing each packet to its concern

  private handle(p: Packet, channel: Channel): void {
    switch (p.type) {
      case 'ping':
        if (p.target === this.node.name) {
          this.node.push(
            p.from.addr,
            { type: 'ack', seq: p.seq, watcher: this.node.watcher, ...this.node.base() },
            channel,
          );
        }
        return;
      case 'ack':
        onAck(this.node, p.seq, p.from, channel, p.watcher);
        return;
      case 'nack':
        onNack(this.node, p.seq, p.from);
        return;
      case 'pingReq':
        relay(this.node, p.from.addr, p.seq, p.target, p.targetAddr);
        return;
      case 'heartbeat':
        onHeartbeat(this.node, p.from, p.handoff);
        return;
      case 'release':
        onRelease(this.node, p.from);
        return;
      case 'gossip':
        return;
      case 'pushPull':
        for (const u of p.state) apply(this.node, u, p.from.name, true);
        if (!p.reply) {
          this.node.push(
            p.from.addr,
            { type: 'pushPull', reply: true, state: state(this.node), ...this.node.base() },
            'tcp',
          );
        }
        return;
    }
  }
}
