// The earliest moment at which one key's history already fails the checker: what a report quotes
// as the operations that show an anomaly. The history as seen at time T keeps the operations
// called by T, and those still open at T have no outcome yet (an open write may or may not have
// taken effect; an open read says nothing). That cut is sound: a linearization of the whole
// history, cut at T, linearizes it (what completed by T saw only writes placed before it, all
// called by T), so a failing cut proves the whole history fails. T is found by bisection over
// the operations' return times with the same checker; each probe has a small budget, and one
// that runs out counts as "not shown yet", so the time found is at worst late, never wrong.
import { checkKv } from '../../check/linearizability.js';
import type { KvOperation } from '../../check/history.js';

const probeBudgetMs = 5_000;

/** `ops` as seen at time `t`. */
export function historyAt(ops: readonly KvOperation[], t: number): KvOperation[] {
  return ops
    .filter((o) => o.call <= t)
    .map((o) => (o.return <= t ? o : { ...o, output: undefined, return: Infinity }));
}

/** The earliest return time at which `ops` fails the checker (Infinity if only as a whole). */
export function earliestFailure(ops: readonly KvOperation[]): number {
  const times = [...new Set(ops.map((o) => o.return).filter(Number.isFinite))].sort(
    (a, b) => a - b,
  );
  const fails = (i: number): boolean =>
    checkKv(historyAt(ops, times[i] as number), { timeoutMs: probeBudgetMs }).verdict === 'illegal';
  let lo = -1;
  let hi = times.length - 1;
  if (hi < 0 || !fails(hi)) return Infinity;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fails(mid)) hi = mid;
    else lo = mid;
  }
  return times[hi] as number;
}
