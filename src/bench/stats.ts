// Percentiles, medians and ratios, as pure functions (table-tested in test/bench/stats.test.ts).

/**
 * The p-th percentile (0 < p ≤ 100) by the nearest-rank method: the smallest sample such that at
 * least p % of the samples are ≤ it. Undefined for no samples.
 */
export function percentile(samples: readonly number[], p: number): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

/** The median (mean of the two middle samples for an even count); undefined for none. */
export function median(samples: readonly number[]): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const hi = sorted[mid] as number;
  return sorted.length % 2 === 1 ? hi : ((sorted[mid - 1] as number) + hi) / 2;
}

export function mean(samples: readonly number[]): number | undefined {
  if (samples.length === 0) return undefined;
  let sum = 0;
  for (const s of samples) sum += s;
  return sum / samples.length;
}

/** Median of the defined values; null when none is defined (JSON-friendly). */
export function medianOf(values: ReadonlyArray<number | null | undefined>): number | null {
  const defined = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return median(defined) ?? null;
}

/** a / b, or null when either is missing or b is 0. */
export function ratio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || b === 0) return null;
  return a / b;
}

/** Latency summary of one run, in ms. */
export interface LatencySummary {
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly meanMs: number | null;
}

export function summarizeLatencies(samplesMs: readonly number[]): LatencySummary {
  return {
    p50Ms: percentile(samplesMs, 50) ?? null,
    p99Ms: percentile(samplesMs, 99) ?? null,
    meanMs: mean(samplesMs) ?? null,
  };
}
