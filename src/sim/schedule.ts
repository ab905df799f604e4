// A seed expands into an explicit schedule: the cluster's configuration and a list of timed
// faults. The run is a function of (seed, schedule), so the shrinker can remove faults from the
// schedule and replay (verification.md, "Shrink"). Swarm testing: each seed enables its own random
// subset of fault kinds and draws its own parameters.
import { prng, type Prng } from '../core/base/prng.js';
import type { LinkFaults } from './network.js';

export type PartitionShape =
  | 'isolateOne'
  | 'isolateLeader'
  | 'majorityMinority'
  | 'majoritiesRing'
  | 'bridge'
  | 'oneWay'
  | 'flapping'
  | 'randomLinks'
  | 'configSplit';

export type Fault =
  | {
      readonly kind: 'partition';
      readonly at: number;
      readonly shape: PartitionShape;
      readonly durationMs: number;
      /**
       * Cut off the next new leader the moment it is elected, before its first append lands: it
       * keeps taking client writes into a log nobody else has (the S5 of Raft's Figure 8).
       */
      readonly onElection?: boolean;
      /** With isolateLeader: the victim's clock also runs this much slower while cut off. */
      readonly slowClockFactor?: number;
    }
  | {
      readonly kind: 'crash';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly downMs: number;
    }
  | {
      readonly kind: 'pause';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly durationMs: number;
    }
  /**
   * `onElection`: wait for the next new leader and propose at once (before its no-op commits);
   * `then`: right after proposing, cut the proposer off ('isolate': its entry reaches nobody) or
   * split the cluster along the replication frontier ('split', a few ms later) for `thenMs`.
   */
  | {
      readonly kind: 'addNode';
      readonly at: number;
      readonly onElection: boolean;
      readonly then?: 'isolate' | 'split';
      readonly thenMs?: number;
    }
  | {
      readonly kind: 'removeNode';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly onElection: boolean;
      readonly then?: 'isolate' | 'split';
      readonly thenMs?: number;
    }
  | { readonly kind: 'transferLeader'; readonly at: number };

export interface SimConfig {
  readonly nodes: 3 | 5;
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly snapshotEntries: number;
  readonly clients: number;
  /** Read-only clients that stay on one node, besides `clients`. */
  readonly readers: number;
  readonly keys: number;
  readonly links: LinkFaults;
  /** Per node (by join order): the rate of its clock relative to true time. */
  readonly clockRates: readonly number[];
  readonly tornWriteProbability: number;
  readonly syncMeanMs: number;
  /** Faults happen in [0, faultPhaseMs); then everything heals. */
  readonly faultPhaseMs: number;
  /** A client gives up on an operation after this long: its outcome becomes unknown. */
  readonly opTimeoutMs: number;
  /** One attempt of a request is abandoned after this long and tried on another node. */
  readonly attemptTimeoutMs: number;
  readonly sectorBytes: number;
  readonly entriesPerAppendMax: number;
  readonly inflightAppendsMax: number;
}

export interface Schedule {
  readonly seed: number;
  readonly config: SimConfig;
  readonly faults: readonly Fault[];
}

const SHAPES: readonly PartitionShape[] = [
  'isolateOne',
  'isolateLeader',
  'majorityMinority',
  'majoritiesRing',
  'bridge',
  'oneWay',
  'flapping',
  'randomLinks',
];

export function generateSchedule(seed: number, opts: { faultPhaseMs?: number } = {}): Schedule {
  const root = prng(seed);
  const p = root.fork('schedule');
  const nodes = p.chance(0.5) ? 5 : 3;
  const electionTicks = p.pick([10, 10, 10, 20]);
  const faultPhaseMs = opts.faultPhaseMs ?? 6000;
  const swarm = (q: number): boolean => p.chance(q);
  const lossy = swarm(0.4);
  const links: LinkFaults = {
    delayMinMs: 0.2 + p.next(),
    delayMeanMs: p.pick([0.5, 1, 3, 10]),
    lossProbability: lossy ? p.next() * 0.2 : 0,
    duplicateProbability: swarm(0.4) ? p.next() * 0.05 : 0,
  };
  const drift = swarm(0.5);
  const clockRates = Array.from({ length: 12 }, () => (drift ? 0.5 + p.next() : 1));
  const kinds = {
    partition: swarm(0.6),
    crash: swarm(0.6),
    pause: swarm(0.4),
    membership: swarm(0.35),
    transfer: swarm(0.2),
  };
  const faults: Fault[] = [];
  // A fifth of the seeds are "leader churn" runs (Jepsen's kill/partition of primaries): many
  // short faults aimed at whoever leads, which is where Figure 8 lives. Another third are
  // "membership churn" runs: a configuration change proposed at elections while links fail and
  // the cluster splits along the configuration frontier, where single-server changes go wrong.
  const profile = p.next();
  const churn = profile < 0.2;
  const memberChurn = !churn && profile < 0.5;
  const count = churn ? p.int(15, 40) : memberChurn ? p.int(30, 60) : p.int(2, 12);
  for (let i = 0; i < count; i++) {
    const at = p.int(100, faultPhaseMs - 200);
    if (churn) {
      faults.push(churnFault(p, at, kinds.membership));
      continue;
    }
    if (memberChurn) {
      faults.push(memberChurnFault(p, at));
      continue;
    }
    const enabled = Object.entries(kinds)
      .filter(([, on]) => on)
      .map(([k]) => k);
    if (enabled.length === 0) break;
    const pickKind = p.pick(enabled);
    faults.push(makeFault(p, pickKind, at));
  }
  faults.sort((a, b) => a.at - b.at);
  return {
    seed,
    config: {
      nodes,
      tickMs: 10,
      electionTicks,
      heartbeatTicks: 1,
      snapshotEntries: p.pick([20, 50, 200, 1000]),
      clients: p.int(2, 6),
      keys: p.int(1, 5),
      links,
      clockRates,
      tornWriteProbability: swarm(0.6) ? 0.5 : 0,
      syncMeanMs: p.pick([0.1, 0.5, 2]),
      faultPhaseMs,
      opTimeoutMs: 1500,
      attemptTimeoutMs: p.pick([30, 100, 300]),
      sectorBytes: 64,
      // Leader-churn runs replicate in small appends, so entries of an old term can reach a
      // majority before the new leader's own entry does: the setting of Figure 8.
      entriesPerAppendMax: p.pick(churn ? [1, 1, 2, 8] : [1, 2, 8, 64]),
      inflightAppendsMax: p.pick([4, 32, 256]),
      readers: p.int(0, 3),
    },
    faults,
  };
}

function churnFault(p: Prng, at: number, membership: boolean): Fault {
  const r = p.next();
  if (membership && r < 0.3)
    return p.chance(0.5)
      ? { kind: 'addNode', at, onElection: true }
      : { kind: 'removeNode', at, target: 'random', onElection: true };
  if (r < 0.55)
    return {
      kind: 'partition',
      at,
      shape: 'isolateLeader',
      durationMs: p.int(50, 600),
      onElection: p.chance(0.5),
    };
  if (r < 0.8) return { kind: 'crash', at, target: 'leader', downMs: p.int(20, 600) };
  return { kind: 'pause', at, target: 'leader', durationMs: p.int(50, 600) };
}

function memberChurnFault(p: Prng, at: number): Fault {
  const r = p.next();
  if (r < 0.4) {
    const r2 = p.next();
    const isolate =
      r2 < 0.25
        ? { then: 'isolate' as const, thenMs: p.int(50, 600) }
        : r2 < 0.75
          ? { then: 'split' as const, thenMs: p.int(50, 600) }
          : {};
    return p.chance(0.5)
      ? { kind: 'addNode', at, onElection: true, ...isolate }
      : { kind: 'removeNode', at, target: 'random', onElection: true, ...isolate };
  }
  if (r < 0.8)
    return {
      kind: 'partition',
      at,
      shape: p.pick(['randomLinks', 'majorityMinority', 'configSplit'] as const),
      durationMs: p.int(30, 800),
    };
  if (r < 0.9) return { kind: 'crash', at, target: 'leader', downMs: p.int(20, 400) };
  return { kind: 'partition', at, shape: 'isolateLeader', durationMs: p.int(30, 400) };
}

function makeFault(p: Prng, kind: string, at: number): Fault {
  const target = p.chance(0.5) ? ('leader' as const) : ('random' as const);
  switch (kind) {
    case 'partition': {
      const shape = p.pick(SHAPES);
      const durationMs = p.int(200, 2500);
      if (shape === 'isolateLeader' && p.chance(0.5)) {
        return { kind: 'partition', at, shape, durationMs, slowClockFactor: 0.25 };
      }
      return { kind: 'partition', at, shape, durationMs };
    }
    case 'crash':
      return { kind: 'crash', at, target, downMs: p.int(50, 2000) };
    case 'pause':
      return { kind: 'pause', at, target, durationMs: p.int(100, 2500) };
    case 'membership':
      return p.chance(0.5)
        ? { kind: 'addNode', at, onElection: false }
        : { kind: 'removeNode', at, target, onElection: false };
    default:
      return { kind: 'transferLeader', at };
  }
}

/** One line of text per fault, for progress output and regression scripts. */
export function describeFault(f: Fault): string {
  switch (f.kind) {
    case 'partition':
      return `${f.at}ms partition ${f.onElection ? 'isolate the next new leader' : f.shape}${f.slowClockFactor ? ` with its clock at ×${f.slowClockFactor}` : ''} for ${f.durationMs}ms`;
    case 'crash':
      return `${f.at}ms crash ${f.target} for ${f.downMs}ms`;
    case 'pause':
      return `${f.at}ms pause ${f.target} for ${f.durationMs}ms`;
    case 'addNode':
      return `${f.at}ms add node${f.onElection ? ' at the next election' : ''}${f.then ? `, then ${f.then} for ${f.thenMs}ms` : ''}`;
    case 'removeNode':
      return `${f.at}ms remove ${f.target}${f.onElection ? ' at the next election' : ''}${f.then ? `, then ${f.then} for ${f.thenMs}ms` : ''}`;
    case 'transferLeader':
      return `${f.at}ms transfer leadership`;
  }
}
