// A seed expands into an explicit schedule: the cluster's configuration and a list of timed
// faults. The run is a function of (seed, schedule), so the shrinker can remove faults from the
// schedule and replay (shrink.ts). Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012):
// each seed enables its own random subset of fault kinds and draws its own parameters.
import { CLOCK_RATE_ERROR_MAX } from '../core/base/clock-drift.js';
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
  /** Every link of one member cut and restored by turns (a flaky NIC). */
  | 'flappingMember'
  | 'randomLinks'
  | 'configSplit'
  /** Every link into the leader cut, its links out kept: it is heard but hears nothing. */
  | 'deafLeader';

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
      /** With isolateLeader: the victim is also starved while cut off (see `starve`). */
      readonly starve?: Starvation;
    }
  | {
      readonly kind: 'crash';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly downMs: number;
      /**
       * Aim at a durability window: 'sync' crashes the target at its next sync, while what it
       * wrote (and, as leader, already sent) is not yet durable; 'between' makes the target
       * snapshot now and crashes it between the steps of that multi-step disk operation (the
       * snapshot file replaced, the WAL not yet rewritten).
       */
      readonly window?: 'sync' | 'between';
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
      /** Added as a learner (a non-voting member that replicates), promoted later or not. */
      readonly learner?: true;
    }
  /** A learner of the configuration, if there is one, becomes a voter. */
  | { readonly kind: 'promoteLearner'; readonly at: number }
  | {
      readonly kind: 'removeNode';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly onElection: boolean;
      readonly then?: 'isolate' | 'split';
      readonly thenMs?: number;
    }
  | { readonly kind: 'transferLeader'; readonly at: number }
  /**
   * The target takes a snapshot and compacts its log now (a follower behind will need it), or,
   * `atConfChange`, the leader does right after it next proposes a configuration change: the
   * snapshot races the change it is below.
   */
  | {
      readonly kind: 'compact';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly atConfChange?: boolean;
    }
  /**
   * A starved process (a CPU-starved VM, a stop/continue loop): it runs for `runMs`, is stopped
   * for `stopMs`, and again, for `durationMs`. Its timers fire late and once per stall.
   */
  /**
   * Every link to and from one member gets `delayMs` slower (a congested or lossy path that TCP
   * retransmits over): messages and frames arrive late, but in order and not lost.
   */
  | {
      readonly kind: 'slowLinks';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly durationMs: number;
      readonly delayMs: number;
    }
  | {
      readonly kind: 'starve';
      readonly at: number;
      readonly target: 'leader' | 'random';
      readonly durationMs: number;
      readonly starve: Starvation;
    };

export interface Starvation {
  readonly stopMs: number;
  readonly runMs: number;
}

/**
 * How the members' clocks run against true time: all at one rate; each within the bound tenure's
 * lease guarantees are stated for (CLOCK_RATE_ERROR_MAX); or anywhere in [0.5, 1.5), where only the
 * guarantees that need no clock (Raft's, linearizability) are checked.
 */
export type DriftClass = 'none' | 'bounded' | 'wild';

export interface SimConfig {
  readonly nodes: 1 | 3 | 5;
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
  readonly driftClass: DriftClass;
  /** Clients that hold leases (and let them expire or revoke them). */
  readonly leaseClients: number;
  /** Clients of the Lock service, on `locks` lock names. */
  readonly lockClients: number;
  /** Candidates of the Election service, on `locks` election names. */
  readonly electionClients: number;
  readonly locks: number;
  /** Clients watching the register keys. */
  readonly watchers: number;
  /**
   * Clients that use the whole key space on keys of their own (keyspace-workload.ts); absent in
   * schedules recorded before they existed, which replay with none.
   */
  readonly keyspaceClients?: number;
  /** Mean extra one-way delay between clients and members, in ms (clients far away); 0: none. */
  readonly clientDelayMeanMs: number;
  readonly leaseTtlSeconds: number;
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
  // Drawn from streams of their own and absent in schedules recorded before they existed
  // (which replay without them):
  /** Probability that a Raft message also arrives a second time, late (see lateCopyMaxMs). */
  readonly lateCopyProbability?: number;
  /** A late copy arrives up to this long after the original: terms late. */
  readonly lateCopyMaxMs?: number;
  /** Probability that a response (an acknowledgement) is duplicated and its copies reordered. */
  readonly ackChaosProbability?: number;
  /** Clients of the register that wait as long as real ones (`patientWaitMs` per attempt). */
  readonly patientClients?: number;
  readonly patientWaitMs?: number;
  /**
   * A crashed member's peer port refuses the others' reconnects (a killed process listens no
   * more): each member linked to it learns so after a delay drawn below twice this mean, in ms,
   * and may start an early election (issue 19). Absent: no such evidence, as before it existed.
   */
  readonly crashEvidenceMeanMs?: number;
  /**
   * A leader pause this long causes no election (member-config.ts, pauseToleranceMs; issue 19),
   * judged by `leaderDetector`. Absent or 0: the randomized election timeout alone, as before.
   */
  readonly pauseToleranceMs?: number;
  readonly leaderDetector?: 'phi' | 'fixed';
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
  'flappingMember',
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
  const driftRoll = p.next();
  const driftClass: DriftClass = driftRoll < 0.35 ? 'none' : driftRoll < 0.75 ? 'bounded' : 'wild';
  const clockRates = Array.from({ length: 12 }, () =>
    driftClass === 'none'
      ? 1
      : driftClass === 'bounded'
        ? 1 - CLOCK_RATE_ERROR_MAX + 2 * CLOCK_RATE_ERROR_MAX * p.next()
        : 0.5 + p.next(),
  );
  const kinds = {
    partition: swarm(0.6),
    crash: swarm(0.6),
    pause: swarm(0.4),
    starve: swarm(0.3),
    membership: swarm(0.35),
    transfer: swarm(0.2),
  };
  const clientDelayMeanMs = p.pick([0, 0, 0, 2, 20, 60]);
  const faults: Fault[] = [];
  // A fifth of the seeds are "leader churn" runs (Jepsen's kill/partition of primaries): many
  // short faults aimed at whoever leads, which is where Figure 8 lives. Another third are
  // "membership churn" runs: a configuration change proposed at elections while links fail and
  // the cluster splits along the configuration frontier, where single-server changes go wrong.
  // A fifth are "authority" runs: the faults that make a leader wrong about its own authority —
  // cut off while clients still reach it, and stopped or starved so that its timers lag.
  const profile = p.next();
  const churn = profile < 0.2;
  const memberChurn = !churn && profile < 0.45;
  const authority = !churn && !memberChurn && profile < 0.65;
  const count = churn
    ? p.int(15, 40)
    : memberChurn
      ? p.int(30, 60)
      : authority
        ? p.int(2, 7)
        : p.int(2, 12);
  for (let i = 0; i < count; i++) {
    const at = p.int(100, faultPhaseMs - 200);
    if (churn) {
      faults.push(churnFault(p, at, kinds.membership));
      continue;
    }
    if (authority) {
      // The first is the one that found the lease bug: the leader cut off from its peers, but not
      // from its clients, and starved or slowed, long enough for a lease to run out elsewhere.
      faults.push(
        i === 0
          ? deposedLeader(p, Math.min(at, faultPhaseMs / 2))
          : authorityFault(p, at, electionTicks * 10),
      );
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
  // Nemeses of their own streams, so that every draw above stays as it was for each seed.
  const late = root.fork('late-messages');
  const lateCopyProbability = late.chance(0.3) ? late.pick([0.002, 0.01, 0.03]) : 0;
  const lateCopyMaxMs = late.pick([3, 10, 30]) * electionTicks * 10;
  const ackChaosProbability = late.chance(0.3) ? late.pick([0.05, 0.2]) : 0;
  const patience = root.fork('patience');
  const patientClients = patience.chance(0.4) ? patience.int(1, 3) : 0;
  const patientWaitMs = patience.int(2500, 8000);
  const evidence = root.fork('crash-evidence');
  const crashEvidenceMeanMs = evidence.chance(0.8) ? evidence.pick([0.5, 2, 10]) : undefined;
  const windows = root.fork('disk-windows');
  if (windows.chance(0.35)) {
    for (let i = windows.int(1, 5); i > 0; i--)
      faults.push({
        kind: 'crash',
        at: windows.int(100, faultPhaseMs - 200),
        target: windows.chance(0.5) ? 'leader' : 'random',
        downMs: windows.int(20, 800),
        window: windows.chance(0.6) ? 'sync' : 'between',
      });
  }
  if (windows.chance(0.35)) {
    for (let i = windows.int(1, 6); i > 0; i--)
      faults.push({
        kind: 'compact',
        at: windows.int(100, faultPhaseMs - 200),
        target: windows.chance(0.5) ? 'leader' : 'random',
        ...(windows.chance(0.5) ? { atConfChange: true } : {}),
      });
  }
  const deaf = root.fork('deaf-leader');
  if (deaf.chance(0.3)) {
    for (let i = deaf.int(1, 3); i > 0; i--)
      faults.push({
        kind: 'partition',
        at: deaf.int(100, faultPhaseMs - 200),
        shape: 'deafLeader',
        durationMs: deaf.int(800, 4000),
      });
  }
  // Learners: added, replicated to, promoted (etcd's member add --learner and member promote).
  const learners = root.fork('learners');
  if (learners.chance(0.15)) {
    for (let i = learners.int(1, 3); i > 0; i--) {
      const at = learners.int(100, faultPhaseMs - 1500);
      faults.push({ kind: 'addNode', at, onElection: false, learner: true });
      if (learners.chance(0.6))
        faults.push({ kind: 'promoteLearner', at: at + learners.int(200, 1200) });
    }
  }
  // A cluster of one voter, whose own durable entries are its quorum, grown by the membership
  // faults (when the seed has them) into a cluster of several.
  const single = root.fork('single-voter').chance(0.05);
  faults.sort((a, b) => a.at - b.at);
  return {
    seed,
    config: {
      nodes: single ? 1 : nodes,
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
      opTimeoutMs: 14 * electionTicks * 10,
      // A read attempt outlasts a round trip to a far client (10 × the mean way, a rare tail).
      attemptTimeoutMs: p.pick([30, 100, 300]) + 20 * clientDelayMeanMs,
      sectorBytes: 64,
      // Leader-churn runs replicate in small appends, so entries of an old term can reach a
      // majority before the new leader's own entry does: the setting of Figure 8.
      entriesPerAppendMax: p.pick(churn ? [1, 1, 2, 8] : [1, 2, 8, 64]),
      inflightAppendsMax: p.pick([4, 32, 256]),
      readers: p.int(0, 3),
      driftClass,
      leaseClients: authority ? p.int(3, 7) : p.int(1, 5),
      lockClients: authority ? p.int(2, 5) : p.int(0, 4),
      electionClients: p.int(0, 3),
      locks: authority ? 1 : p.int(1, 3),
      watchers: p.int(0, 3),
      // From a stream of its own, so that every other draw of the seed stays as it was.
      keyspaceClients: root.fork('keyspace').int(0, 2),
      clientDelayMeanMs,
      leaseTtlSeconds: p.pick([2, 3]),
      lateCopyProbability,
      lateCopyMaxMs,
      ackChaosProbability,
      patientClients,
      patientWaitMs,
      ...(crashEvidenceMeanMs === undefined ? {} : { crashEvidenceMeanMs }),
      ...pauseTolerance(root.fork('pause-tolerance'), electionTicks * 10),
    },
    faults,
  };
}

/**
 * Swarm: a third of the seeds judge silence by the randomized timeout alone (etcd's way), the
 * rest tolerate a leader pause of 1.5 election timeouts (the production default) or of 3, with
 * either detector. The nemesis's pauses (authorityFault, the pause faults) straddle these.
 */
function pauseTolerance(
  p: Prng,
  electionMs: number,
): { pauseToleranceMs?: number; leaderDetector?: 'phi' | 'fixed' } {
  if (p.chance(1 / 3)) return {};
  return {
    pauseToleranceMs: p.pick([1.5, 1.5, 3]) * electionMs,
    leaderDetector: p.chance(0.7) ? 'phi' : 'fixed',
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
      ...(p.chance(0.3) ? { starve: starvation(p) } : {}),
    };
  if (r < 0.8) return { kind: 'crash', at, target: 'leader', downMs: p.int(20, 600) };
  return { kind: 'pause', at, target: 'leader', durationMs: p.int(50, 600) };
}

/** The leader cut off from its peers for longer than a lease, starved or with a slow clock. */
function deposedLeader(p: Prng, at: number): Fault {
  const durationMs = p.int(2500, 5000);
  return p.chance(0.75)
    ? { kind: 'partition', at, shape: 'isolateLeader', durationMs, starve: starvation(p) }
    : { kind: 'partition', at, shape: 'isolateLeader', durationMs, slowClockFactor: 0.25 };
}

/**
 * A leader that keeps its clients but loses its peers, and whose process is stopped or starved
 * meanwhile (SIGSTOP, a stop/continue loop, steal time): what found the lease bugs of real
 * processes. Durations span the lease TTLs (2–3 s), so a deposed leader's answers outlive it.
 */
function authorityFault(p: Prng, at: number, electionMs: number): Fault {
  const r = p.next();
  if (r < 0.3) {
    const durationMs = p.int(1000, 5000);
    const how = p.next();
    if (how < 0.6)
      return { kind: 'partition', at, shape: 'isolateLeader', durationMs, starve: starvation(p) };
    if (how < 0.8)
      return { kind: 'partition', at, shape: 'isolateLeader', durationMs, slowClockFactor: 0.25 };
    return { kind: 'partition', at, shape: 'isolateLeader', durationMs };
  }
  // A member cut off for less than the transport's bound, once or by turns: what it forwarded
  // arrives late, after its clients were told the outcome is unknown and moved on. Or cut off for
  // longer than a client's own timer but less than the member's request timeout (7 elections):
  // what it still serves for a client that moved on (an Unlock, say) completes after the heal.
  if (r < 0.55) {
    const how = p.next();
    if (how < 0.35)
      return { kind: 'partition', at, shape: 'isolateOne', durationMs: p.int(150, 450) };
    if (how < 0.65) {
      const durationMs = Math.round(p.int(30, 65) * electionMs * 0.1);
      return { kind: 'partition', at, shape: 'isolateOne', durationMs };
    }
    return { kind: 'partition', at, shape: 'flappingMember', durationMs: p.int(1000, 4000) };
  }
  if (r < 0.65)
    return {
      kind: 'slowLinks',
      at,
      target: p.chance(0.3) ? 'leader' : 'random',
      durationMs: p.int(500, 3000),
      delayMs: p.int(100, 1500),
    };
  // A member that answers late: the replies it holds go out when it resumes. Longer than a
  // lease, a paused leader wakes to find every lease past its deadline on its own clock.
  if (r < 0.8)
    return {
      kind: 'pause',
      at,
      target: p.chance(0.5) ? 'leader' : 'random',
      durationMs: p.chance(0.5) ? p.int(3000, 6000) : p.int(200, 2000),
    };
  if (r < 0.92)
    return {
      kind: 'starve',
      at,
      target: 'leader',
      durationMs: p.int(300, 3000),
      starve: starvation(p),
    };
  return { kind: 'crash', at, target: 'leader', downMs: p.int(50, 1500) };
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
        return p.chance(0.5)
          ? { kind: 'partition', at, shape, durationMs, slowClockFactor: 0.25 }
          : { kind: 'partition', at, shape, durationMs, starve: starvation(p) };
      }
      return { kind: 'partition', at, shape, durationMs };
    }
    case 'crash':
      return { kind: 'crash', at, target, downMs: p.int(50, 2000) };
    case 'pause':
      return { kind: 'pause', at, target, durationMs: p.int(100, 2500) };
    case 'starve':
      return { kind: 'starve', at, target, durationMs: p.int(200, 2500), starve: starvation(p) };
    case 'membership':
      return p.chance(0.5)
        ? { kind: 'addNode', at, onElection: false }
        : { kind: 'removeNode', at, target, onElection: false };
    default:
      return { kind: 'transferLeader', at };
  }
}

/** Stop/continue cycles of a starved process: stalls longer than its election timeout or not. */
function starvation(p: Prng): Starvation {
  return { stopMs: p.pick([30, 100, 300, 300, 1100]), runMs: p.pick([3, 10, 30]) };
}

/** One line of text per fault, for progress output and regression scripts. */
export function describeFault(f: Fault): string {
  switch (f.kind) {
    case 'partition':
      return `${f.at}ms partition ${f.onElection ? 'isolate the next new leader' : f.shape}${f.slowClockFactor ? ` with its clock at ×${f.slowClockFactor}` : ''}${f.starve ? `, starved (${describeStarvation(f.starve)})` : ''} for ${f.durationMs}ms`;
    case 'crash':
      return `${f.at}ms crash ${f.target}${f.window === 'sync' ? ' at its next sync' : f.window === 'between' ? ' between the steps of a snapshot' : ''} for ${f.downMs}ms`;
    case 'compact':
      return f.atConfChange
        ? `${f.at}ms the leader snapshots right after its next configuration change`
        : `${f.at}ms ${f.target} snapshots and compacts its log`;
    case 'pause':
      return `${f.at}ms pause ${f.target} for ${f.durationMs}ms`;
    case 'addNode':
      return `${f.at}ms add ${f.learner ? 'a learner' : 'node'}${f.onElection ? ' at the next election' : ''}${f.then ? `, then ${f.then} for ${f.thenMs}ms` : ''}`;
    case 'promoteLearner':
      return `${f.at}ms promote a learner to voter`;
    case 'removeNode':
      return `${f.at}ms remove ${f.target}${f.onElection ? ' at the next election' : ''}${f.then ? `, then ${f.then} for ${f.thenMs}ms` : ''}`;
    case 'transferLeader':
      return `${f.at}ms transfer leadership`;
    case 'starve':
      return `${f.at}ms starve ${f.target} (${describeStarvation(f.starve)}) for ${f.durationMs}ms`;
    case 'slowLinks':
      return `${f.at}ms slow the links of ${f.target} by ${f.delayMs}ms for ${f.durationMs}ms`;
  }
}

function describeStarvation(s: Starvation): string {
  return `stopped ${s.stopMs}ms, running ${s.runMs}ms`;
}
