// Progress of a long command (bench, sim, chaos, detect eval) on stderr. On a terminal: one line
// redrawn in place, with a bar. Otherwise (CI logs, a pipe): plain lines, nothing redrawn, a
// running count at most every `plainEveryMs`. Quiet (`--json`): nothing at all, so stdout and
// stderr hold only what the command answers. `tenure snapshot` draws bytes instead (snapshot.ts).

/** Width of the bar in characters. */
const BAR_WIDTH = 24;
/** A counter redrawn on a terminal at most this often, in ms. */
const TTY_REDRAW_MS = 100;
/** Without a terminal: a counter line at most this often, in ms (a 20-minute sim: ~120 lines). */
const PLAIN_EVERY_MS_DEFAULT = 10_000;

export interface ProgressOptions {
  /** The command's name, at the start of each plain line ("bench", "sim"). */
  readonly name: string;
  /** Steps in all. */
  readonly total: number;
  /** Print nothing (--json). */
  readonly quiet?: boolean;
  readonly out?: NodeJS.WriteStream;
  readonly plainEveryMs?: number;
}

export class Progress {
  readonly #name: string;
  #total: number;
  readonly #tty: boolean;
  readonly #quiet: boolean;
  readonly #out: NodeJS.WriteStream;
  readonly #plainEveryMs: number;
  readonly #started = performance.now();
  #lastDrawMs = -Infinity;
  #done = 0;
  #label = '';

  constructor(options: ProgressOptions) {
    this.#name = options.name;
    this.#total = Math.max(1, options.total);
    this.#out = options.out ?? process.stderr;
    this.#quiet = options.quiet === true;
    this.#tty = this.#out.isTTY;
    this.#plainEveryMs = options.plainEveryMs ?? PLAIN_EVERY_MS_DEFAULT;
  }

  #elapsed(): string {
    const s = Math.round((performance.now() - this.#started) / 1000);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }

  #bar(): string {
    const filled = Math.round((Math.min(this.#done, this.#total) / this.#total) * BAR_WIDTH);
    return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}]`;
  }

  #counter(): string {
    const width = String(this.#total).length;
    return `${String(this.#done).padStart(width)}/${this.#total}`;
  }

  /** A step begins (e.g. "round 1/3 tenure: put-throughput"). */
  begin(label: string): void {
    this.#label = label;
    if (this.#quiet) return;
    if (this.#tty) this.#redraw();
    else this.#plain(`[${this.#counter()}] ${label} …`);
  }

  /** The current step ended with a one-line result. */
  end(result: string): void {
    this.#done++;
    if (this.#quiet) return;
    if (this.#tty) {
      this.#out.write(`\r\x1b[K  ${this.#label}: ${result}\n`);
      this.#redraw();
    } else {
      this.#plain(`[${this.#counter()}] ${this.#label}: ${result}`);
    }
  }

  /**
   * A running count (seeds done, cells done) with a short status: redrawn on a terminal, a plain
   * line at most every `plainEveryMs` elsewhere, and always for the last step. `total` replaces
   * the total given at construction (for work counted only once it starts).
   */
  set(done: number, status: string, total?: number): void {
    if (total !== undefined) this.#total = Math.max(1, total);
    this.#done = done;
    this.#label = status;
    if (this.#quiet) return;
    const now = performance.now();
    const last = done >= this.#total;
    if (!last && now - this.#lastDrawMs < (this.#tty ? TTY_REDRAW_MS : this.#plainEveryMs)) return;
    this.#lastDrawMs = now;
    if (this.#tty) this.#redraw();
    else this.#plain(`${this.#bar()} ${this.#counter()} ${status}`);
  }

  /** A line that stays (a result, a failure, a phase): above the bar on a terminal. */
  note(text: string): void {
    if (this.#quiet) return;
    if (this.#tty) {
      this.#out.write(`\r\x1b[K  ${text}\n`);
      this.#redraw();
    } else {
      this.#plain(text);
    }
  }

  #plain(text: string): void {
    this.#out.write(`${this.#name} ${this.#elapsed()} ${text}\n`);
  }

  #redraw(): void {
    this.#out.write(`\r\x1b[K${this.#bar()} ${this.#counter()} ${this.#elapsed()} ${this.#label}`);
  }

  /** Clear the bar line (terminal only). */
  finish(): void {
    if (this.#tty && !this.#quiet) this.#out.write('\r\x1b[K');
  }
}
