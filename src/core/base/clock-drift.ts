// The one assumption tenure's time-based guarantees make about clocks: every member's and every
// client's monotonic clock runs within CLOCK_RATE_ERROR_MAX of true time (0.5 %, i.e. two clocks
// differ in rate by at most about 1 %). Monotonic clocks count real time across process stops
// (CLOCK_MONOTONIC keeps running during SIGSTOP), so this bounds only the oscillator's error and
// rate skew such as libfaketime's; quartz oscillators err by about 0.01 %. Nothing that keeps
// Raft or linearizability safe depends on it: only lease lengths and request deadlines do.

/** The largest rate error of any clock against true time (0.5 %). */
export const CLOCK_RATE_ERROR_MAX = 0.005;

/**
 * The least time that certainly passes on any clock while `elapsedMs` pass on ours: the other may
 * run up to CLOCK_RATE_ERROR_MAX slow and ours as much fast.
 */
export function elapsedElsewhereMinMs(elapsedMs: number): number {
  return (elapsedMs * (1 - CLOCK_RATE_ERROR_MAX)) / (1 + CLOCK_RATE_ERROR_MAX);
}
