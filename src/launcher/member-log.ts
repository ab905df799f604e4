// Where a member's output goes. `file`: appended to a log file (nothing passes through a pipe, so
// a bench pays nothing for it, and the log outlives a detached member's launcher). `ring`: read
// through pipes and the last lines kept in memory (the tests, which quote them on failure and
// leave nothing behind). Either way the launcher's own notes ("exited with code …", "restart")
// sit between the member's lines, and the tail is what a failure quotes.
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { onLines, type LineSplitter } from './lines.js';

export type LogMode = 'file' | 'ring';

/** Prefix of the launcher's own lines in a member's log. */
const notePrefix = '[harness]';
/** Lines kept per member in a ring. */
const ringLinesMax = 400;
/** Bytes read from the end of a log file for its tail. */
const fileTailBytesMax = 64 * 1024;

export interface MemberLog {
  /** The stdio of the member's next start. */
  stdio(): StdioOptions;
  /**
   * After the spawn (`child` undefined if it threw): read the pipes (ring), or close our copy of
   * the file's descriptor, which the child holds now (file).
   */
  spawned(child: ChildProcess | undefined): void;
  /** A launcher line between the member's own. */
  note(text: string): void;
  /** The last `lines` lines. */
  tail(lines: number): string;
}

class FileLog implements MemberLog {
  readonly #path: string;
  #fd: number | undefined;

  constructor(path: string) {
    this.#path = path;
  }

  stdio(): StdioOptions {
    this.#fd = openSync(this.#path, 'a');
    return ['ignore', this.#fd, this.#fd];
  }

  spawned(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  note(text: string): void {
    try {
      appendFileSync(this.#path, `${notePrefix} ${text}\n`);
    } catch {
      // The log went with its directory (removed at stop, or by hand): a note is not worth a crash.
    }
  }

  tail(lines: number): string {
    if (!existsSync(this.#path)) return '(no log)';
    const size = statSync(this.#path).size;
    const length = Math.min(size, fileTailBytesMax);
    const buf = Buffer.alloc(length);
    const fd = openSync(this.#path, 'r');
    try {
      readSync(fd, buf, 0, length, size - length);
    } finally {
      closeSync(fd);
    }
    const all = buf.toString('utf8').replace(/\n$/, '').split('\n');
    return all.slice(-lines).join('\n');
  }
}

class RingLog implements MemberLog {
  readonly #lines: string[] = [];
  readonly #splitters: LineSplitter[] = [];

  stdio(): StdioOptions {
    return ['ignore', 'pipe', 'pipe'];
  }

  spawned(child: ChildProcess | undefined): void {
    if (child === undefined) return;
    const keep = (line: string): void => this.#push(line);
    this.#splitters.length = 0;
    this.#splitters.push(onLines(child.stdout, keep), onLines(child.stderr, keep));
  }

  note(text: string): void {
    this.#push(`${notePrefix} ${text}`);
  }

  #push(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > ringLinesMax) this.#lines.splice(0, this.#lines.length - ringLinesMax);
  }

  tail(lines: number): string {
    const partials = this.#splitters.map((s) => s.partial).filter((p) => p !== '');
    return [...this.#lines, ...partials].slice(-lines).join('\n');
  }
}

export function memberLog(mode: LogMode, file: string): MemberLog {
  return mode === 'file' ? new FileLog(file) : new RingLog();
}
