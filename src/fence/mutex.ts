// A keyed async mutex: callers with the same key run one at a time, in arrival order; different
// keys never wait for each other. It is what makes "check the mark, then act" one step for the
// in-process adapters (memory, files), whose effects are async.

export class KeyedMutex {
  /** The tail of each key's queue; an entry is removed when its last holder leaves. */
  readonly #tails = new Map<string, Promise<void>>();

  /** Run `fn` holding `key`. An abort while waiting rejects with `signal.reason`; `fn` never runs. */
  async run<T>(key: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    const before = this.#tails.get(key) ?? Promise.resolve();
    let leave!: () => void;
    const mine = new Promise<void>((resolve) => (leave = resolve));
    const tail = before.then(() => mine);
    this.#tails.set(key, tail);
    try {
      await waitOrAbort(before, signal);
      return await fn();
    } finally {
      // Leaving early (on abort) is safe: our successor chains on `tail`, which still waits for
      // `before`, so it cannot overtake whoever is ahead of us.
      leave();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys that have a holder or waiters (for tests and leak checks). */
  get size(): number {
    return this.#tails.size;
  }
}

function waitOrAbort(p: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return p;
  return new Promise<void>((resolve, reject) => {
    // The caller's own reason, as is, whatever its type.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
