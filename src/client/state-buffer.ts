// The push-to-pull buffer of the observers (LeaderObserver, tenure/pg's PgLeaderObserver,
// RegistryWatcher): the observer pushes each new state as it learns it, the consumer pulls with
// `for await`. A consumer that does not keep up never grows the buffer past `maxBuffered`: the
// owner's `overflow` rule shrinks it (drop the oldest, or merge into one state). end() finishes
// the iteration once what is buffered has been read.

export interface StateBufferOptions<T> {
  /** States kept for a consumer that does not keep up. */
  readonly maxBuffered: number;
  /** Called with the buffer once it holds more than maxBuffered; must shrink it in place. */
  readonly overflow: (buffered: T[]) => void;
  /** Called with each state as the consumer receives it. */
  readonly onDeliver?: (item: T) => void;
}

/** Drop the oldest state: what observers of "the current leader" want. */
export const dropOldest = <T>(buffered: T[]): void => void buffered.shift();

export class StateBuffer<T> {
  readonly #o: StateBufferOptions<T>;
  readonly #items: T[] = [];
  #waiter: ((r: IteratorResult<T, undefined>) => void) | undefined;
  #ended = false;

  constructor(options: StateBufferOptions<T>) {
    if (!(options.maxBuffered >= 1)) throw new RangeError('StateBuffer: maxBuffered must be ≥ 1');
    this.#o = options;
  }

  /** A new state; ignored after end(). */
  push(item: T): void {
    if (this.#ended) return;
    const w = this.#waiter;
    if (w !== undefined) {
      this.#waiter = undefined;
      this.#o.onDeliver?.(item);
      w({ value: item, done: false });
      return;
    }
    this.#items.push(item);
    if (this.#items.length > this.#o.maxBuffered) this.#o.overflow(this.#items);
  }

  /** No more states: a waiting consumer finishes now, others once the buffer is read. */
  end(): void {
    this.#ended = true;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#items.length > 0) {
      const item = this.#items.shift() as T;
      this.#o.onDeliver?.(item);
      return Promise.resolve({ value: item, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  /** An iterator whose early exit (`break`) runs `close` (the observer's). */
  iterator(close: () => Promise<void>): AsyncIterator<T, undefined> {
    return {
      next: () => this.next(),
      return: async () => {
        await close();
        return { value: undefined, done: true };
      },
    };
  }
}
