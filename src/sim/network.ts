// A simulated network between nodes: per-message delay (exponential), loss and duplication, and
// partitions as a set of blocked directed links, so one-way and partial cuts are expressible
// (VOPR's packet simulator; Jepsen's partition shapes).
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';

export interface LinkFaults {
  /** Minimum one-way delay in milliseconds. */
  readonly delayMinMs: number;
  /** Mean of the exponential extra delay in milliseconds; reordering follows from it. */
  readonly delayMeanMs: number;
  readonly lossProbability: number;
  readonly duplicateProbability: number;
}

export const QUIET_LINKS: LinkFaults = {
  delayMinMs: 0.2,
  delayMeanMs: 1,
  lossProbability: 0,
  duplicateProbability: 0,
};

export class Partitions {
  private blocked = new Set<number>();
  /** Told whenever a link may have healed. */
  onHeal: (() => void) | undefined;

  private static key(from: NodeId, to: NodeId): number {
    return from * 1024 + to;
  }

  block(from: NodeId, to: NodeId): void {
    this.blocked.add(Partitions.key(from, to));
  }

  blockBoth(a: NodeId, b: NodeId): void {
    this.block(a, b);
    this.block(b, a);
  }

  unblock(from: NodeId, to: NodeId): void {
    if (this.blocked.delete(Partitions.key(from, to))) this.onHeal?.();
  }

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.blocked.size > 0 && this.blocked.has(Partitions.key(from, to));
  }

  heal(): void {
    this.blocked.clear();
    this.onHeal?.();
  }

  get size(): number {
    return this.blocked.size;
  }
}

/** Delays for one message: empty when lost, two entries when duplicated. */
export function deliveryDelays(f: LinkFaults, prng: Prng): number[] {
  if (prng.chance(f.lossProbability)) return [];
  const d = f.delayMinMs + prng.exp(f.delayMeanMs);
  if (prng.chance(f.duplicateProbability)) return [d, f.delayMinMs + prng.exp(f.delayMeanMs * 3)];
  return [d];
}
