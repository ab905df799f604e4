// What a key's history says about a few strings of interest ("probes": the values of its unknown
// writes, the values its unknown CASes expect), gathered in one pass over the key's operations for
// unknown-writes.ts. A string fed in is matched against every probe it starts with, by looking up
// its prefixes of the probes' lengths in a map: the cost is one lookup per fed string and distinct
// probe length, with no sorting, so a history with few unknown writes pays almost nothing.

/** What starts with one probe string. */
export interface ProbeStats {
  /** Completed gets' results and completed successful CASes' expected values. */
  seenCount: number;
  seenFirstReturnMs: number;
  /** Expected values of CASes with an unknown outcome. */
  maybeCount: number;
  /** Expected values of completed CASes that failed: the latest return among them. */
  failedLastReturnMs: number;
  /** Non-empty values written by puts, CASes and appends, every outcome, and the last writer. */
  writtenCount: number;
  writer: unknown;
}

export type ObservationKind = 'seen' | 'maybe' | 'failed';

export class ValueProbes {
  private readonly stats = new Map<string, ProbeStats>();
  /** The distinct lengths of the probes, ascending. */
  private readonly lengths: readonly number[];

  constructor(probes: Iterable<string>) {
    for (const p of probes) {
      if (p === '' || this.stats.has(p)) continue;
      this.stats.set(p, {
        seenCount: 0,
        seenFirstReturnMs: Infinity,
        maybeCount: 0,
        failedLastReturnMs: -Infinity,
        writtenCount: 0,
        writer: undefined,
      });
    }
    this.lengths = [...new Set([...this.stats.keys()].map((p) => p.length))].sort((a, b) => a - b);
  }

  /** The statistics of probe `p`, which must have been given to the constructor. */
  of(p: string): ProbeStats | undefined {
    return this.stats.get(p);
  }

  /** Records an observed value (or a suffix of one) under every probe it starts with. */
  observe(value: string, kind: ObservationKind, returnMs: number): void {
    this.forEachPrefix(value, (s) => {
      if (kind === 'seen') {
        s.seenCount++;
        s.seenFirstReturnMs = Math.min(s.seenFirstReturnMs, returnMs);
      } else if (kind === 'maybe') {
        s.maybeCount++;
      } else {
        s.failedLastReturnMs = Math.max(s.failedLastReturnMs, returnMs);
      }
    });
  }

  /** Records a written value under every probe it starts with. */
  write(value: string, writer: unknown): void {
    this.forEachPrefix(value, (s) => {
      s.writtenCount++;
      s.writer = writer;
    });
  }

  private forEachPrefix(value: string, visit: (stats: ProbeStats) => void): void {
    for (const length of this.lengths) {
      if (length > value.length) return;
      const stats = this.stats.get(length === value.length ? value : value.slice(0, length));
      if (stats !== undefined) visit(stats);
    }
  }
}
