// The members' forwarding frames travel as on a TCP connection per direction: in order, never
// duplicated, each after a seeded delay. A partition does not lose them: the kernel keeps the
// bytes and retransmits, so frames wait on the link and arrive, in order, once it heals — which is
// how a forwarded request sent before a partition reaches the leader long after its sender gave up
// (the bug of a late-applied forward). Unless the sender's transport resets a link whose frames
// wait longer than its bound (`waitMaxMs`; production bounds peer writes the same way): then every
// frame waiting on it is gone. A member that crashes loses every frame to and from it.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { EventQueue } from '../core/base/event-queue.js';
import type { LinkFaults, Partitions } from './network.js';
import type { Stamp } from './sim-node.js';

interface Waiting {
  readonly frame: Uint8Array;
  readonly sentAtMs: number;
  /** The sender's life and clock when it sent the frame (what the frame's batch header says). */
  readonly stamp: Stamp;
}

interface Link {
  /** When the last frame in flight arrives: the next may not arrive earlier. */
  lastArrivalMs: number;
  /** Frames that met a cut link, oldest first. */
  waiting: Waiting[];
  /** Bumped when the link resets: frames in flight from before are lost. */
  generation: number;
}

/** Event tags for the run's hash. */
const TAG_FRAME = 7;
const TAG_LINK_RESET = 15;

export interface PeerLinksOptions {
  readonly links: LinkFaults;
  /** A frame waits on a cut link at most this long before the link resets; Infinity: forever. */
  readonly waitMaxMs: number;
  /** Extra delay on a link now (a slow path), in ms. */
  readonly extraDelayMs: (from: NodeId, to: NodeId) => number;
}

export class PeerLinks {
  private readonly links = new Map<number, Link>();

  constructor(
    private readonly q: EventQueue,
    private readonly prng: Prng,
    private readonly partitions: Partitions,
    private readonly opts: PeerLinksOptions,
    /** Hand a frame to `to` (which drops it if it is not running). */
    private readonly deliver: (from: NodeId, to: NodeId, frame: Uint8Array, stamp: Stamp) => void,
  ) {}

  private link(from: NodeId, to: NodeId): Link {
    const k = from * 1024 + to;
    let l = this.links.get(k);
    if (!l) {
      l = { lastArrivalMs: 0, waiting: [], generation: 0 };
      this.links.set(k, l);
    }
    return l;
  }

  send(from: NodeId, to: NodeId, frame: Uint8Array, stamp: Stamp): void {
    const l = this.link(from, to);
    const w: Waiting = { frame, sentAtMs: this.q.now, stamp };
    if (l.waiting.length > 0 || this.partitions.isBlocked(from, to)) {
      this.wait(from, to, l, w);
      return;
    }
    this.transmit(from, to, l, w);
  }

  private transmit(from: NodeId, to: NodeId, l: Link, w: Waiting): void {
    const d =
      this.opts.links.delayMinMs +
      this.prng.exp(this.opts.links.delayMeanMs) +
      this.opts.extraDelayMs(from, to);
    l.lastArrivalMs = Math.max(l.lastArrivalMs, this.q.now + d);
    const gen = l.generation;
    this.q.at(l.lastArrivalMs, TAG_FRAME, () => {
      if (l.generation !== gen) return;
      // Cut while in flight: the bytes are retransmitted once the link heals.
      if (this.partitions.isBlocked(from, to) || l.waiting.length > 0) {
        this.wait(from, to, l, w);
        return;
      }
      this.deliver(from, to, w.frame, w.stamp);
    });
  }

  private wait(from: NodeId, to: NodeId, l: Link, w: Waiting): void {
    l.waiting.push(w);
    if (l.waiting.length !== 1 || !Number.isFinite(this.opts.waitMaxMs)) return;
    const gen = l.generation;
    const due = w.sentAtMs + this.opts.waitMaxMs;
    this.q.at(due, TAG_LINK_RESET, () => {
      if (l.generation === gen && l.waiting[0] === w) this.reset(l);
    });
  }

  private reset(l: Link): void {
    l.generation++;
    l.waiting = [];
  }

  /** Some links may have healed: frames waiting on them go out, in order. */
  pump(): void {
    for (const [k, l] of this.links) {
      if (l.waiting.length === 0) continue;
      const from = Math.floor(k / 1024) as NodeId;
      const to = (k % 1024) as NodeId;
      if (this.partitions.isBlocked(from, to)) continue;
      const ws = l.waiting;
      l.waiting = [];
      for (const w of ws) this.transmit(from, to, l, w);
    }
  }

  /** `id` crashed: its connections are gone, with every frame on them. */
  crash(id: NodeId): void {
    for (const [k, l] of this.links) {
      if (Math.floor(k / 1024) === id || k % 1024 === id) this.reset(l);
    }
  }
}
