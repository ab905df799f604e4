// The simulated network between members: Raft messages with the link's seeded delays, loss and
// duplication (network.ts), the nemeses of late and reordered messages, slowed links, the peer
// channel's frames (peer-links.ts), and partitions as blocked directed links.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import { MESSAGE_TYPE_CODES, type Message } from '../core/raft/types.js';
import type { EventQueue } from '../core/base/event-queue.js';
import type { Invariants } from './invariants.js';
import { deliveryDelays, Partitions } from './network.js';
import { PeerLinks } from './peer-links.js';
import type { RunErrors } from './run-errors.js';
import type { Schedule } from './schedule.js';
import { electionMsOf, SOURCE_FRAMES } from './sim-cluster.js';
import type { SimNode, Stamp } from './sim-node.js';

/** Messages that answer another: the acknowledgements a nemesis reorders and duplicates. */
const RESPONSES: ReadonlySet<Message['type']> = new Set([
  'appResp',
  'heartbeatResp',
  'voteResp',
  'preVoteResp',
]);

/** The event-queue tag of a crash's evidence (Raft messages' tags start at 100). */
const EVIDENCE_TAG = 50_000_000_000;

/** A forwarding frame waits on a cut link at most this many election timeouts (production 5 s). */
const PEER_WAIT_ELECTIONS = 5;

export interface NetworkDeps {
  readonly q: EventQueue;
  readonly cfg: Schedule['config'];
  /** The run's root stream: the peer channel draws from a fork of its own. */
  readonly root: Prng;
  readonly nodes: ReadonlyMap<NodeId, SimNode>;
  readonly inv: Invariants;
  readonly errors: RunErrors;
}

export class SimNetwork {
  readonly partitions = new Partitions();
  readonly links: PeerLinks;
  /** Members whose links are slow, and by how much (ms). */
  readonly slowed = new Map<NodeId, number>();
  private readonly netPrng: Prng;
  /** Draws of the late-message nemeses (a stream of their own, so others stay as they were). */
  private readonly latePrng: Prng;
  /** Delays of the crash evidence (a stream of its own too). */
  private readonly evidencePrng: Prng;

  constructor(private readonly d: NetworkDeps) {
    this.netPrng = d.root.fork('net');
    this.latePrng = d.root.fork('late-delivery');
    this.evidencePrng = d.root.fork('crash-evidence-delivery');
    this.links = new PeerLinks(
      d.q,
      d.root.fork('links'),
      this.partitions,
      // The transport's bound on a frame waiting on a cut link (production: 5 s to a 1 s
      // election timeout).
      {
        links: d.cfg.links,
        waitMaxMs: PEER_WAIT_ELECTIONS * electionMsOf(d.cfg),
        extraDelayMs: (from, to) => this.slowness(from, to),
      },
      (from, to, frame, stamp) => this.deliverFrame(from, to, frame, stamp),
    );
    this.partitions.onHeal = () => this.links.pump();
  }

  /** Extra delay on the link between two members (slowLinks faults). */
  private slowness(a: NodeId, b: NodeId): number {
    return this.slowed.size === 0 ? 0 : Math.max(this.slowed.get(a) ?? 0, this.slowed.get(b) ?? 0);
  }

  /** Whether messages pass both ways between `a` and `b`. */
  connected(a: NodeId, b: NodeId): boolean {
    return !this.partitions.isBlocked(a, b) && !this.partitions.isBlocked(b, a);
  }

  send(m: Message, from: SimNode): void {
    const { q, nodes, inv, errors } = this.d;
    errors.guard(() => inv.onSend(m));
    if (this.partitions.isBlocked(m.from, m.to)) return;
    const stamp = from.stamp(q.now);
    const extra = this.slowness(m.from, m.to);
    for (const d of this.delays(m)) {
      const tag = msgTag(m);
      q.after(d + extra, tag, () => {
        if (this.partitions.isBlocked(m.from, m.to)) return;
        const dest = nodes.get(m.to);
        if (!dest) return;
        dest.run(m.from, () => {
          dest.heardFrom(m.from, stamp, dest.localNow(q.now));
          const member = dest.member;
          if (!member) return;
          const commitBefore = member.replica.raft.log.committed;
          member.receiveMessage(m);
          const raft = member.replica.raft;
          errors.guard(() => inv.onMessageHandled(dest.id, m, commitBefore, raft));
        });
      });
    }
  }

  /**
   * When copies of `m` arrive: the link's own delays, plus the nemeses of late and reordered
   * messages. A late copy arrives up to `lateCopyMaxMs` later (terms late: a stale vote, append
   * or acknowledgement from a leader long gone); an acknowledgement may be duplicated with its
   * copies spread over two election timeouts, so older ones land after newer ones.
   */
  private delays(m: Message): number[] {
    const cfg = this.d.cfg;
    const out = deliveryDelays(cfg.links, this.netPrng);
    const late = cfg.lateCopyProbability ?? 0;
    if (late > 0 && this.latePrng.chance(late))
      out.push(this.latePrng.next() * (cfg.lateCopyMaxMs ?? 0));
    const chaos = cfg.ackChaosProbability ?? 0;
    if (chaos > 0 && RESPONSES.has(m.type) && this.latePrng.chance(chaos)) {
      const spreadMs = 2 * electionMsOf(cfg);
      out.push(this.latePrng.next() * spreadMs, this.latePrng.next() * spreadMs);
    }
    return out;
  }

  /**
   * `crashed` went down as by kill -9: its peer port refuses connections from now on, and each
   * member linked to it learns so (the dial that follows its lost connection is refused,
   * peer-transport.ts) after a drawn delay. A member cut off from it by a partition, then or
   * when the news would arrive, learns nothing (its dial times out, which is no evidence), nor
   * does anyone once `crashed` is back up (its port listens again). A pause (SIGSTOP) gives no
   * evidence at all: the process and its sockets live on.
   */
  crashed(crashed: SimNode): void {
    const meanMs = this.d.cfg.crashEvidenceMeanMs;
    if (meanMs === undefined) return;
    const { q, nodes } = this.d;
    const epoch = crashed.epoch;
    for (const dest of nodes.values()) {
      if (dest.id === crashed.id || !dest.running) continue;
      if (!this.connected(crashed.id, dest.id)) continue;
      const delayMs = this.evidencePrng.next() * 2 * meanMs;
      q.after(delayMs, EVIDENCE_TAG + crashed.id * 100 + dest.id, () => {
        if (crashed.epoch !== epoch || crashed.state !== 'down') return;
        if (!this.connected(crashed.id, dest.id)) return;
        // Under the crashed peer's source: after whatever it sent before it died.
        dest.run(crashed.id, () => dest.member?.peerUnreachable(crashed.id));
      });
    }
  }

  private deliverFrame(from: NodeId, to: NodeId, frame: Uint8Array, stamp: Stamp): void {
    const q = this.d.q;
    const dest = this.d.nodes.get(to);
    if (!dest) return;
    const epoch = dest.epoch;
    dest.run(SOURCE_FRAMES - from, () => {
      if (dest.epoch !== epoch) return;
      dest.heardFrom(from, stamp, dest.localNow(q.now));
      dest.member?.receiveFrame(from, frame);
    });
  }
}

function msgTag(m: Message): number {
  return (
    100 + MESSAGE_TYPE_CODES[m.type] * 1_000_000 + m.from * 10_000 + m.to * 100 + (m.term % 100)
  );
}
