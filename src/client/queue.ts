// A single-consumer async queue behind the SDK's AsyncIterable handles (watch batches, keepalive
// answers). The producer pushes, then ends it (with an error or not); the consumer iterates.
// `onDrain` lets a producer apply backpressure: it pauses its source when `size` reaches its own
// limit and resumes when the consumer has taken items.

export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #ended = false;
  #error: Error | undefined;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  readonly #onDrain: (() => void) | undefined;
  readonly #onReturn: (() => void) | undefined;

  /**
   * `onDrain`: the consumer took an item or is waiting. `onReturn`: the consumer stopped early
   * (`break` out of `for await`), so the producer can release its source.
   */
  constructor(hooks: { onDrain?: () => void; onReturn?: () => void } = {}) {
    this.#onDrain = hooks.onDrain;
    this.#onReturn = hooks.onReturn;
  }

  get size(): number {
    return this.#items.length;
  }

  get ended(): boolean {
    return this.#ended;
  }

  push(item: T): void {
    if (this.#ended) return;
    if (this.#waiter !== undefined) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w.resolve({ value: item, done: false });
      return;
    }
    this.#items.push(item);
  }

  /** No more items; with `error`, the consumer gets it after the items already queued. */
  end(error?: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    if (this.#waiter !== undefined && this.#items.length === 0) {
      const w = this.#waiter;
      this.#waiter = undefined;
      const e = this.#error;
      this.#error = undefined;
      if (e !== undefined) w.reject(e);
      else w.resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) {
      const item = this.#items.shift() as T;
      this.#onDrain?.();
      return Promise.resolve({ value: item, done: false });
    }
    if (this.#ended) {
      const e = this.#error;
      if (e !== undefined) {
        // Report the error once; later calls see a finished iterator.
        this.#error = undefined;
        return Promise.reject(e);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    this.#onDrain?.();
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.#onReturn?.();
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
