// The shortest prefix (in call order) of one key's history that the checker already rejects:
// what a report quotes as the steps that show an anomaly. Found by bisection over prefix lengths
// with the same checker; each probe has a small budget, and a probe that runs out counts as
// "not shown yet", so the prefix found is at worst longer than the shortest, never wrong.
import { checkKv } from '../../check/linearizability.js';
import type { KvOperation } from '../../check/history.js';

const probeBudgetMs = 5_000;

export function shortestIllegalPrefix(ops: readonly KvOperation[]): KvOperation[] {
  const sorted = [...ops].sort((a, b) => a.call - b.call);
  const illegal = (n: number): boolean =>
    checkKv(sorted.slice(0, n), { timeoutMs: probeBudgetMs }).verdict === 'illegal';
  let lo = 0;
  let hi = sorted.length;
  if (!illegal(hi)) return sorted;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (illegal(mid)) hi = mid;
    else lo = mid;
  }
  return sorted.slice(0, hi);
}
