// The one single-consumer async queue: a producer pushes and then ends it (with an error or
// not), a consumer iterates with `for await`. Behind the SDK's watch and keepalive handles, the
// membership's event iterators and the simulator's request streams. Promises only, no timers
// and no async functions, so it sits with the core's other pure pieces.

export interface AsyncQueueOptions {
  /** Keep at most this many items: beyond it the oldest is dropped (and counted in `dropped`). */
  readonly max?: number;
  /** The consumer took an item or is waiting: a producer that paused its source may resume. */
  readonly onDrain?: () => void;
  /** The consumer stopped early (`break` out of `for await`): the producer may release its source. */
  readonly onReturn?: () => void;
  /** The queue ended, by `end()` or by the consumer's return; runs once. */
  readonly onEnd?: () => void;
}

export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  readonly #items: T[] = [];
  #ended = false;
  #error: Error | undefined;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  readonly #opts: AsyncQueueOptions;
  /** Items dropped because the consumer fell `max` behind. */
  dropped = 0;

  constructor(opts: AsyncQueueOptions = {}) {
    this.#opts = opts;
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
    const max = this.#opts.max;
    if (max !== undefined && this.#items.length > max) {
      this.#items.shift();
      this.dropped++;
    }
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
    this.#opts.onEnd?.();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) {
      const item = this.#items.shift() as T;
      this.#opts.onDrain?.();
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
    this.#opts.onDrain?.();
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.#opts.onReturn?.();
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
