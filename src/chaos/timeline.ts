// What the nemesis did and when, on the run's one clock (performance.now(), as the histories):
// the steps an anomaly's report quotes, and the line the progress display shows.

export interface TimelineEntry {
  readonly atMs: number;
  /** The fault class, or 'heal', 'ready', 'note'. */
  readonly kind: string;
  readonly text: string;
}

export class Timeline {
  readonly entries: TimelineEntry[] = [];
  readonly startMs = performance.now();
  /** Date.now() at startMs: a member log line's `time` is wall-clock milliseconds. */
  readonly startEpochMs = Date.now();

  constructor(private readonly onEntry: (e: TimelineEntry) => void = () => undefined) {}

  add(kind: string, text: string): void {
    const e = { atMs: performance.now(), kind, text };
    this.entries.push(e);
    this.onEntry(e);
  }

  /** Seconds since the start, as the report prints every time. */
  at(ms: number): string {
    return `${((ms - this.startMs) / 1000).toFixed(3)}s`;
  }

  /** The entries in [fromMs, toMs]. */
  between(fromMs: number, toMs: number): TimelineEntry[] {
    return this.entries.filter((e) => e.atMs >= fromMs && e.atMs <= toMs);
  }

  epochOf(ms: number): number {
    return this.startEpochMs + (ms - this.startMs);
  }
}
