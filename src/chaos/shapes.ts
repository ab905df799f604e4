// Partition shapes as sets of directed links to cut (links.ts), after the nemeses of Jepsen's
// etcd analysis (jepsen.io/analyses/etcd-3.4.3: isolating one node, the leader, majorities and
// minorities, bridges) and the simulator's (src/sim): which members a shape cuts off both ways
// from every majority is what the verification waits on (they must report no leader).
import type { Prng } from '../core/base/prng.js';
import type { FaultName } from './options.js';
import type { Link } from './links.js';

export interface Shape {
  readonly description: string;
  readonly links: readonly Link[];
  /** Members that must lose their leader while the cut holds (cut off from any majority). */
  readonly leaderless: readonly number[];
  /** Members that must stop naming `leader` as theirs (a leader whose messages no longer arrive). */
  readonly abandon?: { readonly leader: number; readonly by: readonly number[] };
}

/** The partitions shapeOf knows; the starved leader's cut is faults-starve.ts's own. */
export type PartitionFault = Exclude<
  Extract<FaultName, `partition-${string}`>,
  'partition-leader-starved'
>;

function both(a: readonly number[], b: readonly number[]): Link[] {
  const out: Link[] = [];
  for (const x of a) for (const y of b) out.push({ from: x, to: y }, { from: y, to: x });
  return out;
}

/** `xs` in a random order (Fisher–Yates). */
export function shuffled<T>(prng: Prng, xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = prng.int(0, i + 1);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

const set = (xs: readonly number[], names: readonly string[]): string =>
  `{${xs.map((x) => names[x]).join(',')}}`;

/** The shape of `fault` for `size` members of whom `leader` leads (if known). */
export function shapeOf(
  fault: PartitionFault,
  size: number,
  leader: number | undefined,
  prng: Prng,
  names: readonly string[],
): Shape {
  const all = Array.from({ length: size }, (_, i) => i);
  const rest = (xs: readonly number[]): number[] => all.filter((i) => !xs.includes(i));
  const lead = leader ?? prng.int(0, size);
  switch (fault) {
    case 'partition-one':
    case 'partition-flapping': {
      const followers = rest([lead]);
      const x = fault === 'partition-one' ? prng.pick(followers) : prng.int(0, size);
      return {
        description: `${set([x], names)} isolated from ${set(rest([x]), names)}`,
        links: both([x], rest([x])),
        leaderless: [x],
      };
    }
    case 'partition-leader':
      return {
        description: `leader ${set([lead], names)} isolated from ${set(rest([lead]), names)}`,
        links: both([lead], rest([lead])),
        leaderless: [lead],
      };
    case 'partition-majority': {
      // The minority holds the leader half the time: then a new leader must rise on the other side.
      const k = Math.floor((size - 1) / 2);
      const order = shuffled(prng, rest([lead]));
      const minority = prng.chance(0.5) ? [lead, ...order.slice(0, k - 1)] : order.slice(0, k);
      const majority = rest(minority);
      return {
        description: `minority ${set(minority, names)} | majority ${set(majority, names)}`,
        links: both(minority, majority),
        leaderless: minority,
      };
    }
    case 'partition-bridge': {
      // One member (the bridge) sees both halves, which do not see each other; no side but the
      // bridge's own has a majority it can reach without it. Nobody need lose its leader.
      const order = shuffled(prng, all);
      const bridge = order[0] as number;
      const half = Math.floor((size - 1) / 2);
      const left = order.slice(1, 1 + half);
      const right = order.slice(1 + half);
      return {
        description: `${set(left, names)} | bridge ${set([bridge], names)} | ${set(right, names)}`,
        links: both(left, right),
        leaderless: [],
      };
    }
    case 'partition-one-way-in': {
      // Nothing reaches x; what it sends still arrives (its pre-votes, which disrupt nobody).
      const x = prng.int(0, size);
      return {
        description: `nothing reaches ${set([x], names)}`,
        links: rest([x]).map((y) => ({ from: y, to: x })),
        leaderless: [x],
      };
    }
    case 'partition-one-way-out': {
      // Nothing x sends arrives; it still hears the others. When x leads, its followers hear no
      // heartbeat and must elect another (whose heartbeats x hears, so x need not be leaderless);
      // a cut-off follower keeps hearing its leader, and the cut shows only in the probes.
      const x = prng.chance(0.5) ? lead : prng.int(0, size);
      return {
        description: `nothing from ${set([x], names)} arrives${x === lead ? ' (the leader)' : ''}`,
        links: rest([x]).map((y) => ({ from: x, to: y })),
        leaderless: [],
        ...(x === lead ? { abandon: { leader: x, by: rest([x]) } } : {}),
      };
    }
  }
}
