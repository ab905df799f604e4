// A suspicion of one member and its timer (SWIM §4.2; Lifeguard §IV.B "Local Health Aware
// Suspicion"). The timeout starts at `max` and falls towards `min` as independent confirmations
// arrive, on a logarithmic curve; with K expected confirmations it reaches `min` at the K-th:
//
//   timeout(C) = max(min, max − (max − min) · log(C + 1) / log(K + 1))
//
// memberlist's choices (its util.go and state.go): min = SuspicionMult · max(1, log10 n) · probe
// interval, max = SuspicionMaxTimeoutMult · min, K = SuspicionMult − 2, and K = 0 when n − 2 < K.

import { assert } from '../../base/index.js';

/** SWIM/memberlist's minimum suspicion timeout, ms. */
export function suspicionMinMs(suspicionMult: number, n: number, probeIntervalMs: number): number {
  const scale = Math.max(1, Math.log10(Math.max(1, n)));
  return suspicionMult * scale * probeIntervalMs;
}

/** Lifeguard's expected number of independent confirmations K for a cluster of n. */
export function expectedConfirmations(suspicionMult: number, n: number): number {
  const k = Math.max(0, Math.round(suspicionMult) - 2);
  return n - 2 < k ? 0 : k;
}

/** Lifeguard's timeout for C confirmations out of K expected, between min and max, ms. */
export function lifeguardTimeoutMs(c: number, k: number, minMs: number, maxMs: number): number {
  assert(minMs <= maxMs, () => `suspicion: min ${minMs} > max ${maxMs}`);
  if (k < 1) return minMs;
  const frac = Math.log(c + 1) / Math.log(k + 1);
  return Math.max(minMs, Math.floor(maxMs - (maxMs - minMs) * frac));
}

export class Suspicion {
  private readonly confirmers = new Set<string>();
  private shiftMs = 0;
  /** tenure: a probe of our own, through relays that all answered, found the target silent. */
  corroborated = false;

  /**
   * `startMs`: when this node began to suspect; `firstAccuser` does not count as a confirmation;
   * `k`: confirmations that bring the timeout down to `minMs`.
   */
  constructor(
    readonly startMs: number,
    readonly minMs: number,
    readonly maxMs: number,
    readonly k: number,
    readonly firstAccuser: string,
    /** Suspicion bound (tenure): the earliest time the target could have stopped. */
    readonly silentSinceMs: number,
  ) {
    assert(minMs >= 0 && minMs <= maxMs, () => `suspicion: bad bounds ${minMs}..${maxMs}`);
  }

  get confirmations(): number {
    return this.confirmers.size;
  }

  /** The accusers seen so far: the first, then the independent confirmers. */
  accusers(): string[] {
    return [this.firstAccuser, ...this.confirmers];
  }

  /** Count an independent accuser; returns whether it was new. */
  confirm(from: string): boolean {
    if (from === this.firstAccuser || this.confirmers.has(from)) return false;
    this.confirmers.add(from);
    return true;
  }

  timeoutMs(): number {
    return lifeguardTimeoutMs(this.confirmers.size, this.k, this.minMs, this.maxMs);
  }

  deadlineMs(): number {
    return this.startMs + this.shiftMs + this.timeoutMs();
  }

  /** Push the deadline back by `ms` (we were stalled, or fresh evidence arrived). */
  postpone(ms: number): void {
    this.shiftMs += ms;
  }
}
