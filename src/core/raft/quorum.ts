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
  const n = voters.length;
  if (n === 0) return 0 as T;
  // Insertion sort, descending: asked on every acknowledgement a leader takes, over a handful of
  // voters, where it beats map-then-sort with a comparator (an array and a closure per call).
  const xs = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const x: number = reached.get(voters[i] as NodeId) ?? 0;
    let j = i;
    while (j > 0 && (xs[j - 1] as number) < x) {
      xs[j] = xs[j - 1] as number;
      j--;
    }
    xs[j] = x;
  }
  // With n voters sorted descending, the (⌊n/2⌋+1)-th value is held by a majority.
  return xs[Math.floor(n / 2)] as T;
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
