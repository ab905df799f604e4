// Shrinking a failing schedule to a minimal one, which neither Jepsen, etcd's robustness tests,
// FoundationDB's simulator nor TigerBeetle's VOPR does. Candidates drop faults (halves, then
// quarters, …, then one at a time, ddmin-style: Zeller & Hildebrandt, "Simplifying and Isolating
// Failure-Inducing Input", 2002), then halve fault durations, then reduce clients and keys. A
// candidate is kept only if the same invariant still fails, so the result reproduces the
// original bug, not another one.
import type { Mutants } from '../core/base/mutants.js';
import { runSchedule, type RunResult } from './run.js';
import type { Fault, Schedule } from './schedule.js';

export interface ShrinkResult {
  readonly schedule: Schedule;
  readonly result: RunResult;
  readonly runs: number;
}

/** Replays spent at most on one shrink: each takes well under a second. */
export const SHRINK_RUNS_MAX = 300;

export async function shrink(
  original: Schedule,
  failed: RunResult,
  mutants: Mutants,
  onProgress?: (runs: number, faults: number) => void,
): Promise<ShrinkResult> {
  let best = original;
  let bestResult = failed;
  let runs = 0;
  const stillFails = async (cand: Schedule): Promise<RunResult | undefined> => {
    if (runs >= SHRINK_RUNS_MAX) return undefined;
    runs++;
    const r = await runSchedule(cand, { mutants });
    onProgress?.(runs, best.faults.length);
    return !r.ok && r.invariant === failed.invariant ? r : undefined;
  };
  const withFaults = (faults: readonly Fault[]): Schedule => ({ ...best, faults });

  // 1. Drop chunks of faults, from halves down to single faults.
  let chunk = Math.max(1, Math.ceil(best.faults.length / 2));
  while (chunk >= 1 && best.faults.length > 0 && runs < SHRINK_RUNS_MAX) {
    let progressed = false;
    for (let start = 0; start < best.faults.length && runs < SHRINK_RUNS_MAX;) {
      const cand = withFaults([
        ...best.faults.slice(0, start),
        ...best.faults.slice(start + chunk),
      ]);
      const r = await stillFails(cand);
      if (r) {
        best = cand;
        bestResult = r;
        progressed = true;
      } else {
        start += chunk;
      }
    }
    if (!progressed) chunk = Math.floor(chunk / 2);
  }

  // 2. Halve each fault's duration while it still fails.
  for (let i = 0; i < best.faults.length && runs < SHRINK_RUNS_MAX; i++) {
    for (;;) {
      const f = best.faults[i] as Fault;
      const shorter = halveDuration(f);
      if (!shorter) break;
      const faults = [...best.faults];
      faults[i] = shorter;
      const cand = withFaults(faults);
      const r = await stillFails(cand);
      if (!r) break;
      best = cand;
      bestResult = r;
    }
  }

  // 3. Fewer clients, readers, lease holders, lock users and keys.
  const minimum = {
    clients: 0,
    readers: 0,
    leaseClients: 0,
    lockClients: 0,
    electionClients: 0,
    watchers: 0,
    keys: 1,
  } as const;
  for (const field of [
    'clients',
    'readers',
    'leaseClients',
    'lockClients',
    'electionClients',
    'watchers',
    'keys',
  ] as const) {
    while (best.config[field] > minimum[field] && runs < SHRINK_RUNS_MAX) {
      const cand: Schedule = {
        ...best,
        config: { ...best.config, [field]: best.config[field] - 1 },
      };
      const r = await stillFails(cand);
      if (!r) break;
      best = cand;
      bestResult = r;
    }
  }
  return { schedule: best, result: bestResult, runs };
}

function halveDuration(f: Fault): Fault | undefined {
  switch (f.kind) {
    case 'partition':
      return f.durationMs >= 40 ? { ...f, durationMs: Math.floor(f.durationMs / 2) } : undefined;
    case 'pause':
    case 'starve':
    case 'slowLinks':
      return f.durationMs >= 40 ? { ...f, durationMs: Math.floor(f.durationMs / 2) } : undefined;
    case 'crash':
      return f.downMs >= 40 ? { ...f, downMs: Math.floor(f.downMs / 2) } : undefined;
    default:
      return undefined;
  }
}
