// The nemesis: the schedule's faults applied to the running cluster (crashes, also aimed at a
// member's durability windows; pauses and CPU starvation; slowed links; partitions of every
// shape, flapping links among them; compaction; membership changes, some armed to fire right
// after an election; leadership transfer), and the heal that ends them all.
import type { Prng } from '../core/base/prng.js';
import { nodeId, type NodeId } from '../core/base/units.js';
import type { ConfState } from '../core/raft/types.js';
import { SNAP_FILE } from '../replica/wal.js';
import type { DurableLogs } from './durable-logs.js';
import type { EventQueue } from '../core/base/event-queue.js';
import type { Invariants } from './invariants.js';
import { planPartition } from './partition-shapes.js';
import type { Fault, PartitionShape, Schedule, Starvation } from './schedule.js';
import { electionMsOf, type SimCluster } from './sim-cluster.js';
import type { SimNetwork } from './sim-network.js';
import type { SimNode } from './sim-node.js';

/** Event tags of the nemesis's own events (they feed the event hash). */
const TAG_FAULT_STEP = 6;
const TAG_FLAP = 8;
const TAG_ARMED_CHANGE = 14;
/** Node IDs the membership faults may add up to. */
const NODE_ID_MAX = 12;
/** Voters a membership fault keeps the cluster within. */
const VOTERS_MIN = 3;
const VOTERS_MAX = 5;

type MembershipFault = Extract<Fault, { kind: 'addNode' | 'removeNode' }>;

/** A configuration as a comparable string. */
export function confKey(c: ConfState): string {
  return `${c.voters.join(',')}|${c.learners.join(',')}`;
}

export interface NemesisDeps {
  readonly q: EventQueue;
  readonly cfg: Schedule['config'];
  readonly prng: Prng;
  readonly nodes: ReadonlyMap<NodeId, SimNode>;
  readonly cluster: SimCluster;
  readonly network: SimNetwork;
  readonly inv: Invariants;
  readonly durableLogs: DurableLogs;
}

export class Nemesis {
  /** Isolations (their durations and starvation) waiting for the next election. */
  private armedIsolations: { durationMs: number; starve: Starvation | undefined }[] = [];
  /** Membership faults waiting for the next election. */
  private armed: MembershipFault[] = [];
  private stopStarving: (() => void)[] = [];
  /** Members being starved, until when (they take no fair part in elections meanwhile). */
  private readonly starvedUntil = new Map<NodeId, number>();
  /** Compact faults waiting for the next configuration change the leader proposes. */
  private compactsAtConfChange = 0;
  private nextId: number;

  constructor(private readonly d: NemesisDeps) {
    this.nextId = d.cfg.nodes + 1;
  }

  private get electionMs(): number {
    return electionMsOf(this.d.cfg);
  }

  /** Whether `id` is being starved at true time `nowMs`. */
  starved(id: NodeId, nowMs: number): boolean {
    return (this.starvedUntil.get(id) ?? 0) > nowMs;
  }

  /** A new leader: faults armed for the next election fire now. */
  onLeader(node: SimNode): void {
    const isolation = this.armedIsolations.shift();
    if (isolation !== undefined) this.isolate(node.id, isolation.durationMs, isolation.starve);
    if (this.armed.length > 0) {
      // Propose right after the election, before the new leader's no-op commits: the moment the
      // single-server change bug needs (thesis §4.1).
      const f = this.armed.shift();
      if (f) this.d.q.after(0, TAG_ARMED_CHANGE, () => this.membership(f, node));
    }
  }

  private target(
    t: 'leader' | 'random',
    filter: (n: SimNode) => boolean = () => true,
  ): SimNode | undefined {
    const live = [...this.d.nodes.values()].filter((n) => n.state === 'up' && filter(n));
    if (live.length === 0) return undefined;
    if (t === 'leader') {
      const l = this.d.cluster.leader();
      if (l && filter(l)) return l;
    }
    return this.d.prng.pick(live);
  }

  apply(f: Fault): void {
    const { q, cluster, network } = this.d;
    switch (f.kind) {
      case 'crash': {
        const n = this.target(f.target);
        if (!n) return;
        const down = (): void => {
          if (n.state !== 'up') return;
          cluster.crash(n);
          q.after(f.downMs, TAG_FAULT_STEP, () => {
            if (n.state === 'down') cluster.boot(n);
          });
        };
        if (f.window === undefined) down();
        else this.crashInWindow(n, f.window, down);
        return;
      }
      case 'compact': {
        if (f.atConfChange) this.compactsAtConfChange++;
        else this.target(f.target)?.member?.replica.snapshotNow();
        return;
      }
      case 'pause': {
        const n = this.target(f.target);
        if (!n) return;
        n.state = 'paused';
        q.after(f.durationMs, TAG_FAULT_STEP, () => cluster.resume(n));
        return;
      }
      case 'starve': {
        const n = this.target(f.target);
        if (n) this.starve(n, f.durationMs, f.starve);
        return;
      }
      case 'slowLinks': {
        const n = this.target(f.target);
        if (!n) return;
        network.slowed.set(n.id, f.delayMs);
        q.after(f.durationMs, TAG_FAULT_STEP, () => network.slowed.delete(n.id));
        return;
      }
      case 'partition':
        if (f.onElection) this.armedIsolations.push({ durationMs: f.durationMs, starve: f.starve });
        else this.partition(f.shape, f.durationMs, f.slowClockFactor, f.starve);
        return;
      case 'addNode':
      case 'removeNode':
        if (f.onElection) this.armed.push(f);
        else this.membership(f, cluster.leader());
        return;
      case 'promoteLearner': {
        const replica = cluster.leader()?.member?.replica;
        const learner = replica?.raft.conf().learners[0];
        if (replica && learner !== undefined)
          replica.proposeConfChange({ type: 'addVoter', nodeId: learner });
        return;
      }
      case 'transferLeader': {
        const l = cluster.leader();
        const replica = l?.member?.replica;
        if (!l || !replica) return;
        const others = replica.raft.conf().voters.filter((v) => v !== l.id);
        if (others.length > 0) replica.transferLeader(this.d.prng.pick(others));
        return;
      }
    }
  }

  /**
   * Crash `n` inside a durability window: at its next sync, before the sync completes (what it
   * wrote, and as leader sent, is not yet durable), or between the two replaces of a snapshot it
   * takes now. Disarmed after a few election timeouts if the window never opens.
   */
  private crashInWindow(n: SimNode, window: 'sync' | 'between', down: () => void): void {
    const q = this.d.q;
    const epoch = n.epoch;
    const disarm = (): void => {
      n.disk.onSyncIssued = undefined;
      n.disk.onReplaced = undefined;
    };
    const fire = (): void => {
      disarm();
      // Right after the disk call returns, before any completion (which takes at least 50 µs).
      q.after(0.01, TAG_FAULT_STEP, () => {
        if (n.epoch === epoch) down();
      });
    };
    if (window === 'sync') n.disk.onSyncIssued = fire;
    else {
      n.disk.onReplaced = (name) => {
        if (name === SNAP_FILE) fire();
      };
      n.member?.replica.snapshotNow();
    }
    q.after(5 * this.electionMs, TAG_FAULT_STEP, () => {
      if (n.epoch === epoch) disarm();
    });
  }

  /** Stop `n` for `stopMs`, let it run for `runMs`, again, for `durationMs`. */
  private starve(n: SimNode, durationMs: number, s: Starvation): void {
    const q = this.d.q;
    const until = q.now + durationMs;
    this.starvedUntil.set(n.id, Math.max(until, this.starvedUntil.get(n.id) ?? 0));
    let stopped = false;
    const epoch = n.epoch;
    const cycle = (): void => {
      if (stopped || n.epoch !== epoch || n.state !== 'up' || q.now >= until) return;
      n.state = 'paused';
      q.after(s.stopMs, TAG_FAULT_STEP, () => {
        if (n.epoch !== epoch) return;
        this.d.cluster.resume(n);
        q.after(s.runMs, TAG_FAULT_STEP, cycle);
      });
    };
    cycle();
    this.stopStarving.push(() => {
      stopped = true;
    });
  }

  private membership(f: MembershipFault, l: SimNode | undefined): void {
    const { cluster } = this.d;
    const replica = l?.member?.replica;
    if (!l || !replica || l.state !== 'up' || replica.raft.role !== 'leader') return;
    const conf = replica.raft.conf();
    let proposed = false;
    if (f.kind === 'addNode') {
      if (this.nextId > NODE_ID_MAX || conf.voters.length >= VOTERS_MAX) return;
      const id = nodeId(this.nextId);
      const type = f.learner ? 'addLearner' : 'addVoter';
      if (replica.proposeConfChange({ type, nodeId: id }) !== undefined) {
        this.nextId++;
        cluster.addNode(id);
        proposed = true;
      }
    } else {
      if (conf.voters.length <= VOTERS_MIN) return;
      const n = this.target(f.target, (x) => conf.voters.includes(x.id));
      if (!n) return;
      if (replica.proposeConfChange({ type: 'removeNode', nodeId: n.id }) !== undefined) {
        cluster.removing.add(n.id);
        proposed = true;
      }
    }
    if (proposed && this.compactsAtConfChange > 0) {
      // The change is appended, not applied: a snapshot now is taken below it.
      this.compactsAtConfChange--;
      replica.snapshotNow();
    }
    if (proposed && f.then === 'isolate') {
      this.isolate(l.id, f.thenMs ?? 0, undefined);
    } else if (proposed && f.then === 'split') {
      this.d.q.after(this.d.prng.next() * 5, TAG_FAULT_STEP, () =>
        this.partition('configSplit', f.thenMs ?? 0, undefined, undefined),
      );
    }
  }

  /** Cut `id` off from every other node for `durationMs`; messages in flight are lost too. */
  private isolate(id: NodeId, durationMs: number, starve: Starvation | undefined): void {
    const partitions = this.d.network.partitions;
    const ids = [...this.d.nodes.keys()];
    for (const o of ids) if (o !== id) partitions.blockBoth(id, o);
    const v = this.d.nodes.get(id);
    if (v && starve) this.starve(v, durationMs, starve);
    this.d.q.after(durationMs, TAG_FAULT_STEP, () => {
      for (const o of ids) {
        if (o === id) continue;
        partitions.unblock(id, o);
        partitions.unblock(o, id);
      }
    });
  }

  private partition(
    shape: PartitionShape,
    durationMs: number,
    slowClockFactor: number | undefined,
    starve: Starvation | undefined,
  ): void {
    const { q, nodes, network } = this.d;
    const ids = [...nodes.values()].filter((n) => n.running).map((n) => n.id);
    const plan = planPartition(
      shape,
      {
        ids,
        leader: this.d.cluster.leader()?.id,
        aheadOfCommittedConf: () => this.aheadOfCommittedConf(ids),
      },
      this.d.prng,
    );
    if (plan.kind === 'none') return;
    if (plan.kind === 'flap') {
      this.flap(plan.links, plan.periodMs, durationMs);
      return;
    }
    for (const [a, b] of plan.links) network.partitions.block(a, b);
    const v = plan.victim === undefined ? undefined : nodes.get(plan.victim);
    if (v && slowClockFactor !== undefined) {
      // A cut-off node whose clock also runs slow (steal time, a starved VM) believes in its
      // leadership longest: its CheckQuorum timeout is the last to fire.
      const normal = v.clockRate;
      v.setClockRate(q.now, normal * slowClockFactor);
      q.after(durationMs, TAG_FAULT_STEP, () => v.setClockRate(q.now, normal));
    }
    if (v && starve) this.starve(v, durationMs, starve);
    q.after(durationMs, TAG_FAULT_STEP, () => network.partitions.heal());
  }

  /** Of `ids`, the members whose configuration the leader has not committed yet. */
  private aheadOfCommittedConf(ids: readonly NodeId[]): NodeId[] | undefined {
    const raft = this.d.cluster.leader()?.member?.replica.raft;
    if (!raft) return undefined;
    const committed = confKey(raft.confAtIndex(raft.log.committed));
    return ids.filter((id) => {
      const r = this.d.nodes.get(id)?.member?.replica.raft;
      return r !== undefined && confKey(r.conf()) !== committed;
    });
  }

  /** Cut `links` (both ways) and restore them by turns every `periodMs`, for `durationMs`. */
  private flap(links: readonly [NodeId, NodeId][], periodMs: number, durationMs: number): void {
    const { q } = this.d;
    const partitions = this.d.network.partitions;
    let on = false;
    let stopped = false;
    const restore = (): void => {
      for (const [x, y] of links) {
        partitions.unblock(x, y);
        partitions.unblock(y, x);
      }
    };
    const flip = (): void => {
      if (stopped) return;
      on = !on;
      if (on) for (const [x, y] of links) partitions.blockBoth(x, y);
      else restore();
      q.after(periodMs, TAG_FLAP, flip);
    };
    flip();
    this.stopStarving.push(() => {
      stopped = true;
    });
    q.after(durationMs, TAG_FAULT_STEP, () => {
      stopped = true;
      restore();
    });
  }

  /** End every fault: after healing nothing more goes wrong. */
  heal(): void {
    // Faults waiting for an election are disarmed.
    this.armed = [];
    this.armedIsolations = [];
    for (const stop of this.stopStarving) stop();
    this.stopStarving = [];
    this.d.network.slowed.clear();
    this.d.network.partitions.heal();
    for (const n of this.d.nodes.values()) {
      if (n.state === 'paused') this.d.cluster.resume(n);
      if (n.state === 'down') this.d.cluster.boot(n);
    }
  }

  /** Stop nodes whose removal has committed: they are no longer part of the cluster. */
  reapRemoved(): void {
    const { cluster } = this.d;
    const raft = cluster.leader()?.member?.replica.raft;
    if (!raft || cluster.removing.size === 0) return;
    const committedConf = raft.confAtIndex(raft.log.committed);
    for (const id of [...cluster.removing]) {
      if (committedConf.voters.includes(id) || committedConf.learners.includes(id)) continue;
      const n = this.d.nodes.get(id);
      if (n && n.state !== 'removed') {
        cluster.crash(n);
        n.state = 'removed';
        this.d.inv.forget(id);
        this.d.durableLogs.forget(id);
      }
      cluster.removing.delete(id);
    }
  }
}
