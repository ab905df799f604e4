// One simulated member process: its life (up, paused as by SIGSTOP, down after a crash, removed),
// its clock (a rate against true time, continuous across rate changes), its disk, the production
// member it runs, and what arrived while it was paused. A paused process runs nothing: messages,
// calls and disk completions wait in arrival order per source, and its periodic timers coalesce
// into one late firing, as Node's do after a stall.
import type { NodeId } from '../core/base/units.js';
import type { PeerClockReading } from '../replica/io.js';
import type { Member } from '../replica/member/member.js';
import type { MemberApi } from './api-channel.js';
import type { SimDisk } from './disk.js';
import type { LogHolder } from './invariants.js';

export type NodeState = 'up' | 'down' | 'paused' | 'removed';

export interface Held {
  /** Where the event came from: order is kept per source, not across sources. */
  readonly source: number;
  readonly fn: () => void;
  /** Told instead of `fn` if the process crashes first (a client's call breaks). */
  readonly lost: (() => void) | undefined;
}

/** What a message or frame says of its sender: its life and its clock when it sent it. */
export interface Stamp {
  readonly epoch: number;
  readonly nowMs: number;
}

/** Held events at most while paused; beyond it the oldest are lost (a full socket buffer). */
export const HELD_MAX = 100_000;

export class SimNode {
  state: NodeState = 'up';
  /** Bumped at every boot and crash: callbacks of an earlier life do nothing. */
  epoch = 0;
  member: Member | undefined;
  api: MemberApi | undefined;
  /** Stops this life's event recording. */
  detach: (() => void) | undefined;
  held: Held[] = [];
  /** Periodic timers that came due while paused: each fires once on resume. */
  heldTicks = new Set<() => void>();
  /** While down: the log it would restart with. */
  ghost: LogHolder | undefined;
  /** The newest clock reading each peer sent (the peer channel's `heard`), and of which life. */
  readonly heard = new Map<NodeId, PeerClockReading & { readonly epoch: number }>();
  private localBaseMs = 0;
  private trueBaseMs = 0;

  constructor(
    readonly id: NodeId,
    readonly disk: SimDisk,
    /** How fast this node's clock runs against true time (drift); changed by clock faults. */
    public clockRate: number,
  ) {}

  /** The node's monotonic clock: continuous across rate changes. */
  localNow(trueNowMs: number): number {
    return this.localBaseMs + (trueNowMs - this.trueBaseMs) * this.clockRate;
  }

  /** The true time at which this node's clock will read `localMs`, at the current rate. */
  trueTimeOf(localMs: number): number {
    return this.trueBaseMs + (localMs - this.localBaseMs) / this.clockRate;
  }

  /** A new process: its clock reads `startMs` now and runs at the same rate. */
  restartClock(trueNowMs: number, startMs: number): void {
    this.localBaseMs = startMs;
    this.trueBaseMs = trueNowMs;
  }

  setClockRate(trueNowMs: number, rate: number): void {
    this.localBaseMs = this.localNow(trueNowMs);
    this.trueBaseMs = trueNowMs;
    this.clockRate = rate;
  }

  get running(): boolean {
    return this.state === 'up' || this.state === 'paused';
  }

  /** Run `fn` now, or on resume if paused; if down (or it crashes first), `lost` instead. */
  run(source: number, fn: () => void, lost?: () => void): void {
    if (this.state === 'up') fn();
    else if (this.state === 'paused' && this.held.length < HELD_MAX)
      this.held.push({ source, fn, lost });
    else lost?.();
  }

  /**
   * A peer's clock reading arrived with a message or frame; keep the newest of its latest life. A
   * restarted peer's clock starts anew, so a reading of an earlier life says nothing of it now.
   */
  heardFrom(peer: NodeId, stamp: Stamp, localMs: number): void {
    const prev = this.heard.get(peer);
    if (
      prev !== undefined &&
      (stamp.epoch < prev.epoch || (stamp.epoch === prev.epoch && stamp.nowMs <= prev.peerMs))
    )
      return;
    this.heard.set(peer, { epoch: stamp.epoch, peerMs: stamp.nowMs, localMs });
  }

  /** This node's stamp on what it sends now. */
  stamp(trueNowMs: number): Stamp {
    return { epoch: this.epoch, nowMs: this.localNow(trueNowMs) };
  }
}
