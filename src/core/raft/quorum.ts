// Majority arithmetic over a set of voters (Raft §5.2, §5.3). Pure functions, table-tested.
import type { LogIndex, NodeId } from '../base/units.js';

/** The largest index that a majority of `voters` has reached (missing voters count as 0). */
/**
 * The largest value that a majority of `voters` has reached (missing voters count as 0): the
 * commit index over match indexes, or the confirmed ReadIndex round over answered rounds.
 */
export function quorumIndex<T extends number = LogIndex>(
  voters: readonly NodeId[],
  reached: ReadonlyMap<NodeId, T>,
): T {
  if (voters.length === 0) return 0 as T;
  const xs = voters.map((v) => reached.get(v) ?? 0).sort((a, b) => b - a);
  // With n voters sorted descending, the (⌊n/2⌋+1)-th value is held by a majority.
  return xs[Math.floor(voters.length / 2)] as T;
}

/** Won once a majority granted, lost once a majority is out of reach, else pending. */
export function voteResult(
  voters: readonly NodeId[],
  votes: ReadonlyMap<NodeId, boolean>,
): 'won' | 'lost' | 'pending' {
  if (voters.length === 0) return 'lost';
  let granted = 0;
  let rejected = 0;
  for (const v of voters) {
    const g = votes.get(v);
    if (g === true) granted++;
    else if (g === false) rejected++;
  }
  const need = Math.floor(voters.length / 2) + 1;
  if (granted >= need) return 'won';
  if (voters.length - rejected < need) return 'lost';
  return 'pending';
}
