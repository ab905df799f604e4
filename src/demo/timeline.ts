// The demo's timeline: each event printed as it happens, stamped with the time since the demo
// began (one monotonic clock for the whole run), and kept for the JSON report.
//
//     3.12s  worker-2   holds the lock, token 18

export interface TimelineEvent {
  /** Milliseconds since the timeline began. */
  readonly atMs: number;
  /** Who acted: a worker's name, `store`, `demo`, `cluster`. */
  readonly who: string;
  readonly text: string;
}

/** Width of the `who` column (the longest name is `cluster`/`worker-2`). */
const whoWidth = 9;

export class Timeline {
  readonly #out: (line: string) => void;
  readonly #nowMs: () => number;
  readonly #startMs: number;
  readonly #events: TimelineEvent[] = [];

  constructor(out: (line: string) => void, nowMs: () => number = () => performance.now()) {
    this.#out = out;
    this.#nowMs = nowMs;
    this.#startMs = nowMs();
  }

  get events(): readonly TimelineEvent[] {
    return this.#events;
  }

  /** Milliseconds since the timeline began. */
  elapsedMs(): number {
    return this.#nowMs() - this.#startMs;
  }

  event(who: string, text: string): void {
    const e = { atMs: Math.round(this.elapsedMs()), who, text };
    this.#events.push(e);
    this.#out(describeEvent(e));
  }

  /** A line without a time stamp, indented under the events (explanations, results). */
  note(text: string): void {
    this.#out(`${' '.repeat(10 + whoWidth)}${text}`);
  }

  /** A section heading, after a blank line. */
  heading(text: string): void {
    this.#out('');
    this.#out(text);
  }
}

/** The canonical text of an event: `  3.12s  worker-2  holds the lock, token 18`. */
export function describeEvent(e: TimelineEvent): string {
  return `${(e.atMs / 1000).toFixed(2).padStart(7)}s  ${e.who.padEnd(whoWidth)}${e.text}`;
}
