// Majority arithmetic over a set of voters (Raft §5.2, §5.3). Pure functions, table-tested.
import type { LogIndex, NodeId } from '../base/units.js';
import { logIndex } from '../base/units.js';

/** The largest index that a majority of `voters` has reached (missing voters count as 0). */
export function quorumIndex(
  voters: readonly NodeId[],
  match: ReadonlyMap<NodeId, LogIndex>,
): LogIndex {
  if (voters.length === 0) return logIndex(0);
  const xs = voters.map((v) => match.get(v) ?? 0).sort((a, b) => b - a);
  // With n voters sorted descending, the (⌊n/2⌋+1)-th value is held by a majority.
  return logIndex(xs[Math.floor(voters.length / 2)] as number);
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
