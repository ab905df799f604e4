// The one discrete-event queue: a binary heap ordered by (virtual time, insertion sequence), so
// equal-time events run in a fixed order and a seed replays exactly. Behind the Raft simulator
// (src/sim), the detector evaluation and the SWIM interaction test. A pure data structure with no
// clock of its own, so it sits with the core's other pure pieces; production code does not use it.

export interface SimEvent {
  readonly at: number;
  readonly seq: number;
  readonly tag: number;
  readonly fn: () => void;
}

export class EventQueue {
  private heap: SimEvent[] = [];
  private seq = 0;
  now = 0;

  get size(): number {
    return this.heap.length;
  }

  /** Schedule `fn` at absolute virtual time `at` (not before now). `tag` feeds the event hash. */
  at(at: number, tag: number, fn: () => void): void {
    const ev: SimEvent = { at: Math.max(at, this.now), seq: this.seq++, tag, fn };
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(ev, h[p] as SimEvent)) break;
      h[i] = h[p] as SimEvent;
      i = p;
    }
    h[i] = ev;
  }

  after(delay: number, tag: number, fn: () => void): void {
    this.at(this.now + delay, tag, fn);
  }

  pop(): SimEvent | undefined {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop() as SimEvent;
    if (h.length > 0) {
      let i = 0;
      const n = h.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && less(h[r] as SimEvent, h[l] as SimEvent) ? r : l;
        if (!less(h[c] as SimEvent, last)) break;
        h[i] = h[c] as SimEvent;
        i = c;
      }
      h[i] = last;
    }
    this.now = top.at;
    return top;
  }

  peekTime(): number | undefined {
    return this.heap[0]?.at;
  }
}

function less(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
