// Which links a partition fault cuts. The shapes are the ones Jepsen's nemeses and VOPR use, plus
// two aimed at this system: the leader alone (the lease-contract hazard) and a split along the
// frontier of a configuration change (Raft §4.3 / Ongaro's thesis §4.2.1, one-at-a-time changes).
//
// The plan is pure: the run applies it to its Partitions and schedules the heal, so the draws
// from `prng` happen here, in a fixed order, and a seed replays exactly.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { PartitionShape } from './schedule.js';

/** What a partition needs to know about the cluster when it starts. */
export interface PartitionView {
  /** The members that are running, in a fixed order. */
  readonly ids: readonly NodeId[];
  readonly leader: NodeId | undefined;
  /**
   * Members holding a configuration the leader has not committed yet; undefined when there is
   * no leader to ask. Called only for the `configSplit` shape.
   */
  readonly aheadOfCommittedConf: () => NodeId[] | undefined;
}

export type PartitionPlan =
  | { readonly kind: 'none' }
  /** Directed links to cut until the heal; `victim` is the node cut off from all others. */
  | { readonly kind: 'cut'; readonly links: [NodeId, NodeId][]; readonly victim?: NodeId }
  /** Links (both directions) cut and restored by turns every `periodMs`. */
  | { readonly kind: 'flap'; readonly links: [NodeId, NodeId][]; readonly periodMs: number };

export function planPartition(shape: PartitionShape, view: PartitionView, p: Prng): PartitionPlan {
  const { ids } = view;
  // Drawn for every shape, first, so adding a shape does not move any other shape's draws.
  const shuffled = ids
    .map((x) => ({ x, k: p.next() }))
    .sort((a, b) => a.k - b.k)
    .map((o) => o.x);
  const links: [NodeId, NodeId][] = [];
  const cut = (a: NodeId, b: NodeId): void => {
    links.push([a, b], [b, a]);
  };
  switch (shape) {
    case 'isolateOne':
    case 'isolateLeader': {
      const victim = shape === 'isolateLeader' ? (view.leader ?? shuffled[0]) : shuffled[0];
      if (victim === undefined) return { kind: 'none' };
      for (const o of ids) if (o !== victim) cut(victim, o);
      return { kind: 'cut', links, victim };
    }
    case 'deafLeader': {
      // The leader's messages go out, nothing comes back: its followers keep hearing a leader
      // that can commit nothing (CheckQuorum's case, Raft thesis §6.2).
      const victim = view.leader ?? shuffled[0];
      if (victim === undefined) return { kind: 'none' };
      for (const o of ids) if (o !== victim) links.push([o, victim]);
      break;
    }
    case 'majorityMinority': {
      const k = Math.floor(ids.length / 2);
      const minority = shuffled.slice(0, k);
      const majority = shuffled.slice(k);
      for (const a of minority) for (const b of majority) cut(a, b);
      break;
    }
    case 'majoritiesRing': {
      // Each node reaches only its ring neighbours: everyone sees a majority of 3 (of 5), no two
      // the same majority (Jepsen's majorities-ring).
      const n = shuffled.length;
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const d = Math.min(j - i, n - (j - i));
          if (d > 1) cut(shuffled[i] as NodeId, shuffled[j] as NodeId);
        }
      }
      break;
    }
    case 'bridge': {
      // Two halves that only the bridge node (shuffled[0]) connects.
      const rest = shuffled.slice(1);
      const half = Math.ceil(rest.length / 2);
      for (const a of rest.slice(0, half)) for (const b of rest.slice(half)) cut(a, b);
      break;
    }
    case 'oneWay': {
      // The victim can send but not receive (or the reverse): an asymmetric cut.
      const victim = shuffled[0];
      if (victim === undefined) return { kind: 'none' };
      const inbound = p.chance(0.5);
      for (const o of ids) {
        if (o === victim) continue;
        links.push(inbound ? [o, victim] : [victim, o]);
      }
      break;
    }
    case 'configSplit': {
      // Nodes still on the leader's last committed configuration on one side, nodes holding a
      // pending change on the other.
      const ahead = view.aheadOfCommittedConf();
      if (ahead === undefined) return { kind: 'none' };
      const behind = ids.filter((id) => !ahead.includes(id));
      for (const a of ahead) for (const b of behind) cut(a, b);
      break;
    }
    case 'randomLinks': {
      // Each directed link fails on its own (VOPR's uniform partition, asymmetric).
      for (const a of ids) for (const b of ids) if (a !== b && p.chance(0.3)) links.push([a, b]);
      break;
    }
    case 'flapping':
    case 'flappingMember': {
      // One link, or every link of one member (a flaky NIC), cut and restored by turns.
      const [a, b] = shuffled;
      if (a === undefined || b === undefined) return { kind: 'none' };
      const flapped: [NodeId, NodeId][] =
        shape === 'flapping' ? [[a, b]] : ids.filter((o) => o !== a).map((o) => [a, o]);
      const periodMs = shape === 'flapping' ? p.int(20, 300) : p.int(150, 450);
      return { kind: 'flap', links: flapped, periodMs };
    }
  }
  return { kind: 'cut', links };
}
