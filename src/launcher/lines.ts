// Splitting a byte stream into lines: child output arrives in chunks that end anywhere, so the
// unfinished tail of one chunk is kept for the next.

export class LineSplitter {
  #partial = '';

  /** The lines `chunk` completes (without their '\n'). */
  push(chunk: Buffer | string): string[] {
    const parts = (this.#partial + chunk.toString()).split('\n');
    this.#partial = parts.pop() ?? '';
    return parts;
  }

  /** What has arrived after the last '\n'. */
  get partial(): string {
    return this.#partial;
  }
}

/** Feed every line of `stream` (a child's stdout or stderr) to `onLine`. */
export function onLines(
  stream: NodeJS.ReadableStream | null | undefined,
  onLine: (line: string) => void,
): LineSplitter {
  const splitter = new LineSplitter();
  stream?.on('data', (chunk: Buffer | string) => {
    for (const line of splitter.push(chunk)) onLine(line);
  });
  return splitter;
}
