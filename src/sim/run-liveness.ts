// What the run asks of the cluster's progress: that a connected majority is served while faults
// are active (availability.ts judges it from this view), and that at the end every live member of
// the final configuration has applied the same log and holds the same state.
import type { NodeId } from '../core/base/units.js';
import type { Raft } from '../core/raft/raft.js';
import { AvailabilityWatch } from './availability.js';
import type { EventQueue } from '../core/base/event-queue.js';
import { InvariantViolation } from './invariants.js';
import { confKey, type Nemesis } from './nemesis.js';
import type { SimCluster } from './sim-cluster.js';
import type { SimNetwork } from './sim-network.js';
import type { SimNode } from './sim-node.js';

export interface LivenessView {
  readonly q: EventQueue;
  readonly nodes: ReadonlyMap<NodeId, SimNode>;
  readonly cluster: SimCluster;
  readonly network: SimNetwork;
  readonly nemesis: Nemesis;
}

/** Availability while faults are active, judged over `windowMs`: see availability.ts. */
export function availabilityWatch(v: LivenessView, windowMs: number): AvailabilityWatch {
  const { q, nodes, cluster, network, nemesis } = v;
  return new AvailabilityWatch(
    {
      now: () => q.now,
      voters: () => {
        if (cluster.removing.size > 0) return undefined;
        let best: Raft | undefined;
        for (const r of cluster.liveRafts())
          if (!best || r.log.committed > best.log.committed) best = r;
        if (!best) return undefined;
        const committed = best.confAtIndex(best.log.committed);
        for (const r of cluster.liveRafts())
          if (confKey(r.conf()) !== confKey(committed)) return undefined;
        return committed.voters;
      },
      healthy: (id) => {
        const n = nodes.get(id);
        return (
          n !== undefined &&
          n.state === 'up' &&
          n.member !== undefined &&
          !network.slowed.has(id) &&
          !nemesis.starved(id, q.now)
        );
      },
      connected: (a, b) => network.connected(a, b),
      clockRate: (id) => nodes.get(id)?.clockRate ?? 1,
      // Followed by a majority it can hear from: one that hears the leader but cannot answer it
      // follows a leader that can commit nothing.
      served: () => {
        for (const n of nodes.values()) {
          const r = n.state === 'up' ? n.member?.replica.raft : undefined;
          if (r?.role !== 'leader') continue;
          const reaches = (id: NodeId): boolean => id === r.id || network.connected(id, r.id);
          if (cluster.followers(r, reaches) > r.conf().voters.length / 2) return true;
        }
        return false;
      },
    },
    windowMs,
  );
}

/** Live members of the final configuration have applied the same log and hold the same state. */
export function checkConvergence(v: LivenessView): void {
  const l = v.cluster.leader();
  const lr = l?.member?.replica;
  if (!lr) throw new InvariantViolation('liveness', 'no leader at the end of the run');
  const conf = lr.raft.conf();
  const members = [...conf.voters, ...conf.learners];
  const target = lr.raft.log.committed;
  const digests = new Map<number, number>();
  for (const id of members) {
    const n = v.nodes.get(id);
    const r = n?.member?.replica;
    if (!r || n?.state !== 'up') continue;
    if (r.raft.log.applied < target) {
      const pr = lr.raft.progressView().get(id);
      throw new InvariantViolation(
        'liveness',
        `node ${id} applied only ${r.raft.log.applied} of ${target} after quiescing (${r.raft.describe()}; leader ${lr.raft.describe()} sees match=${pr?.match} next=${pr?.next} ${pr?.state})`,
      );
    }
    const applied = r.raft.log.applied;
    const d = r.stateMachine.digest();
    const prev = digests.get(applied);
    if (prev !== undefined && prev !== d)
      throw new InvariantViolation(
        'convergence',
        `nodes at applied index ${applied} hold different states`,
      );
    digests.set(applied, d);
  }
}
