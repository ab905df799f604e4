// A binary min-heap of simulator events ordered by (time, sequence): ties run in the order they
// were scheduled, which keeps every run a deterministic function of its seed.

export interface HeapItem {
  readonly t: number;
  readonly seq: number;
}

export class EventHeap<T extends HeapItem> {
  private readonly a: T[] = [];

  get size(): number {
    return this.a.length;
  }

  push(item: T): void {
    const a = this.a;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i] as T, a[p] as T)) break;
      swap(a, i, p);
      i = p;
    }
  }

  pop(): T | undefined {
    const a = this.a;
    if (a.length === 0) return undefined;
    const top = a[0] as T;
    const last = a.pop() as T;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l] as T, a[m] as T)) m = l;
        if (r < a.length && less(a[r] as T, a[m] as T)) m = r;
        if (m === i) break;
        swap(a, i, m);
        i = m;
      }
    }
    return top;
  }

  peekTime(): number {
    return this.a.length === 0 ? Infinity : (this.a[0] as T).t;
  }
}

function less(x: HeapItem, y: HeapItem): boolean {
  return x.t < y.t || (x.t === y.t && x.seq < y.seq);
}

function swap<T>(a: T[], i: number, j: number): void {
  const t = a[i] as T;
  a[i] = a[j] as T;
  a[j] = t;
}
