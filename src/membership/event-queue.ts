// A bounded queue that turns pushed events into an async iterator: `next()` waits for the next
// event, the loop ends when the queue is closed, an abort signal ends it too, and the oldest events
// are dropped (and counted) if the consumer falls behind.

export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private done = false;
  dropped = 0;

  constructor(
    private readonly max: number,
    private readonly onClose: () => void = () => undefined,
  ) {}

  push(item: T): void {
    if (this.done) return;
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      w({ value: item, done: false });
      return;
    }
    this.items.push(item);
    if (this.items.length > this.max) {
      this.items.shift();
      this.dropped++;
    }
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    const w = this.waiter;
    this.waiter = null;
    w?.({ value: undefined, done: true });
    this.onClose();
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
