// The queue of membership updates waiting to be gossiped (SWIM §4.1; memberlist's
// TransmitLimitedQueue). One pending update per member: a newer one replaces it. Each is sent at
// most `limit` times, preferring the least-sent, so fresh news spreads first; the limit is
// RetransmitMult · ceil(log10(n + 1)).

import { assert } from '../../base/index.js';
import type { Update } from './messages.js';

interface Item {
  update: Update;
  transmits: number;
  enqueuedMs: number;
  order: number;
}

/** memberlist's retransmit limit for a cluster of n. */
export function retransmitLimit(retransmitMult: number, n: number): number {
  return Math.max(1, Math.ceil(retransmitMult * Math.ceil(Math.log10(n + 1))));
}

export class BroadcastQueue {
  private readonly items = new Map<string, Item>();
  private counter = 0;

  constructor(readonly capacity: number) {
    assert(capacity >= 1, 'broadcast queue: capacity must be ≥ 1');
  }

  get size(): number {
    return this.items.size;
  }

  /** Queue an update, replacing any pending one about the same member. */
  enqueue(update: Update, nowMs: number): void {
    this.items.set(update.name, { update, transmits: 0, enqueuedMs: nowMs, order: ++this.counter });
    if (this.items.size > this.capacity) this.evict();
  }

  /** The pending update about `name`, if any. */
  pending(name: string): Update | undefined {
    return this.items.get(name)?.update;
  }

  /**
   * Take up to `max` updates for one packet, least-sent first (newest first among equals), count
   * the transmission, and drop the ones that reached `limit`. `first` names a member whose update
   * goes first (the buddy system). Suspicions and deaths are aged by their time in the queue.
   */
  take(max: number, limit: number, nowMs: number, first?: string): Update[] {
    if (this.items.size === 0 || max <= 0) return [];
    const chosen: Item[] = [];
    const lead = first === undefined ? undefined : this.items.get(first);
    if (lead !== undefined) chosen.push(lead);
    if (chosen.length < max) {
      const rest = [...this.items.values()].filter((i) => i !== lead);
      if (rest.length > max - chosen.length) {
        rest.sort((a, b) => a.transmits - b.transmits || b.order - a.order);
      }
      for (const i of rest) {
        if (chosen.length >= max) break;
        chosen.push(i);
      }
    }
    const out: Update[] = [];
    for (const item of chosen) {
      item.transmits++;
      out.push(aged(item.update, nowMs - item.enqueuedMs));
      if (item.transmits >= limit) this.items.delete(item.update.name);
    }
    return out;
  }

  clear(): void {
    this.items.clear();
  }

  private evict(): void {
    let worst: Item | undefined;
    for (const i of this.items.values()) {
      if (worst === undefined || i.transmits > worst.transmits) worst = i;
    }
    if (worst !== undefined) this.items.delete(worst.update.name);
  }
}

/** An update as of `ageMs` after it was queued: accusations carry their silence forward. */
export function aged(u: Update, ageMs: number): Update {
  if ((u.type === 'suspect' || u.type === 'dead') && ageMs > 0) {
    return { ...u, silentForMs: u.silentForMs + ageMs };
  }
  return u;
}
