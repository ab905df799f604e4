// Progress on stderr while the bench runs. On a terminal: one line redrawn in place, with a bar.
// Otherwise (CI logs, a pipe): one plain line per step, nothing redrawn.

/** Width of the bar in characters. */
const barWidth = 24;

export class Progress {
  readonly #total: number;
  readonly #tty: boolean;
  readonly #out: NodeJS.WriteStream;
  readonly #started = performance.now();
  #done = 0;
  #label = '';

  constructor(totalSteps: number, out: NodeJS.WriteStream = process.stderr) {
    this.#total = Math.max(1, totalSteps);
    this.#out = out;
    this.#tty = out.isTTY;
  }

  #elapsed(): string {
    const s = Math.round((performance.now() - this.#started) / 1000);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  }

  #bar(): string {
    const filled = Math.round((this.#done / this.#total) * barWidth);
    return `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}]`;
  }

  #counter(): string {
    const width = String(this.#total).length;
    return `${String(this.#done).padStart(width)}/${this.#total}`;
  }

  /** A step begins (e.g. "round 1/3 tenure: put-throughput"). */
  begin(label: string): void {
    this.#label = label;
    if (this.#tty) this.#redraw();
    else this.#out.write(`bench ${this.#elapsed()} [${this.#counter()}] ${label} …\n`);
  }

  /** The current step ended with a one-line result. */
  end(result: string): void {
    this.#done++;
    if (this.#tty) {
      this.#out.write(`\r\x1b[K  ${this.#label}: ${result}\n`);
      this.#redraw();
    } else {
      this.#out.write(`bench ${this.#elapsed()} [${this.#counter()}] ${this.#label}: ${result}\n`);
    }
  }

  /** A note that is not a step (cluster start and stop, warnings). */
  note(text: string): void {
    if (this.#tty) {
      this.#out.write(`\r\x1b[K  ${text}\n`);
      this.#redraw();
    } else {
      this.#out.write(`bench ${this.#elapsed()} ${text}\n`);
    }
  }

  #redraw(): void {
    this.#out.write(`\r\x1b[K${this.#bar()} ${this.#counter()} ${this.#elapsed()} ${this.#label}`);
  }

  /** Clear the bar line (terminal only). */
  finish(): void {
    if (this.#tty) this.#out.write('\r\x1b[K');
  }
}
