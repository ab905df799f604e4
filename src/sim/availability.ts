// Availability while faults are still active, not only after they heal: whenever a majority of
// the voters is up, healthy and fully connected among itself for long enough, some leader must be
// followed by a majority. A leader that lost its majority yet keeps its followers from electing
// another (CheckQuorum lost, a lease that outlives its quorum) passes every check run after the
// heal; it fails this one during the fault (Raft thesis §6.2 on CheckQuorum, §9.6 on PreVote).
import type { NodeId } from '../core/base/units.js';
import { InvariantViolation } from './invariants.js';

export interface AvailabilityView {
  now(): number;
  /** The committed voters, or undefined while a configuration change is in flight. */
  voters(): readonly NodeId[] | undefined;
  /** Up, not starved, on ordinary links: a member that should take part in an election. */
  healthy(id: NodeId): boolean;
  /** Messages pass both ways between `a` and `b`. */
  connected(a: NodeId, b: NodeId): boolean;
  /** How fast the member's clock runs against true time (its timeouts stretch by 1/rate). */
  clockRate(id: NodeId): number;
  /** Some leader is followed by a majority of the voters. */
  served(): boolean;
}

export class AvailabilityWatch {
  private group = '';
  private sinceMs = 0;

  constructor(
    private readonly view: AvailabilityView,
    /** How long a connected majority may go unserved, in true ms at clock rate 1. */
    private readonly windowMs: number,
  ) {}

  check(): void {
    const v = this.view;
    const voters = v.voters();
    // Served is the common case and the cheap question: asked first, the connected groups are
    // searched (every subset of the voters) only while no leader serves a majority.
    if (!voters || v.served()) {
      this.group = '';
      return;
    }
    const group = largestConnected(
      voters.filter((id) => v.healthy(id)),
      v,
    );
    if (group.length <= voters.length / 2) {
      this.group = '';
      return;
    }
    const key = group.join(',');
    if (key !== this.group) {
      this.group = key;
      this.sinceMs = v.now();
      return;
    }
    const slowest = Math.min(1, ...group.map((id) => v.clockRate(id)));
    const allowedMs = this.windowMs / slowest;
    if (v.now() - this.sinceMs > allowedMs)
      throw new InvariantViolation(
        'availability',
        `voters ${key} of ${voters.join(',')} were up and connected for ${Math.round(v.now() - this.sinceMs)}ms ` +
          `(allowed ${Math.round(allowedMs)}ms) without a leader followed by a majority`,
      );
  }
}

/** The largest set of `ids` connected pairwise (the first in id order among equals). */
function largestConnected(ids: readonly NodeId[], v: AvailabilityView): NodeId[] {
  let best: NodeId[] = [];
  const n = ids.length;
  for (let mask = 1; mask < 1 << n; mask++) {
    const set = ids.filter((_, i) => (mask & (1 << i)) !== 0);
    if (set.length <= best.length) continue;
    let ok = true;
    for (let a = 0; ok && a < set.length; a++)
      for (let b = a + 1; ok && b < set.length; b++)
        ok = v.connected(set[a] as NodeId, set[b] as NodeId);
    if (ok) best = set;
  }
  return best;
}
