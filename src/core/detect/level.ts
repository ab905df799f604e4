// The suspicion-level API. A detector reports a level on the φ scale; callers bind their own
// actions to thresholds of it, so a cheap action (stop routing to a peer) can fire early and a
// costly one (fail over leadership, remove the member) only late or on an operator's word.

import { assert } from '../base/index.js';

export interface LevelThreshold<A extends string> {
  /** The caller's name for what to do: 'stopRouting', 'failover', 'remove'. */
  readonly action: A;
  /** Engage when the level reaches this value. Infinity: only on a verdict of death. */
  readonly engageAt: number;
  /** Release when the level falls below this (hysteresis); must be ≤ engageAt. */
  readonly releaseBelow: number;
  /** Engage only on an operator's word (`engageByOperator`), never on the level alone. */
  readonly operatorOnly?: boolean;
}

export interface LevelChange<A extends string> {
  readonly action: A;
  readonly engaged: boolean;
  readonly level: number;
  readonly atMs: number;
  readonly byOperator: boolean;
}

/** A reasonable ladder for a membership user; see the membership config for its meaning. */
export const DEFAULT_LADDER: readonly LevelThreshold<'stopRouting' | 'failover' | 'remove'>[] = [
  { action: 'stopRouting', engageAt: 3, releaseBelow: 1 },
  { action: 'failover', engageAt: 8, releaseBelow: 1 },
  { action: 'remove', engageAt: Infinity, releaseBelow: 1 },
];

/** Tracks which actions are engaged for one peer as its level moves. */
export class LevelLadder<A extends string> {
  private readonly engagedSet = new Set<A>();
  private readonly byOperator = new Set<A>();
  private lastLevel = 0;

  constructor(readonly thresholds: readonly LevelThreshold<A>[]) {
    const seen = new Set<A>();
    for (const t of thresholds) {
      assert(!seen.has(t.action), () => `level ladder: duplicate action ${t.action}`);
      seen.add(t.action);
      assert(t.releaseBelow <= t.engageAt, () => `level ladder: ${t.action} releases above engage`);
    }
  }

  get level(): number {
    return this.lastLevel;
  }

  engaged(): ReadonlySet<A> {
    return this.engagedSet;
  }

  /** Feed the current level; returns the actions that changed, in threshold order. */
  update(level: number, atMs: number): LevelChange<A>[] {
    assert(!Number.isNaN(level), 'level ladder: level is NaN');
    this.lastLevel = level;
    const out: LevelChange<A>[] = [];
    for (const t of this.thresholds) {
      const on = this.engagedSet.has(t.action);
      if (!on && !t.operatorOnly && level >= t.engageAt) {
        this.engagedSet.add(t.action);
        out.push({ action: t.action, engaged: true, level, atMs, byOperator: false });
      } else if (on && !this.byOperator.has(t.action) && level < t.releaseBelow) {
        this.engagedSet.delete(t.action);
        out.push({ action: t.action, engaged: false, level, atMs, byOperator: false });
      }
    }
    return out;
  }

  /** The operator's word: engage an action regardless of the level; it holds until released. */
  engageByOperator(action: A, atMs: number): LevelChange<A>[] {
    this.check(action);
    this.byOperator.add(action);
    if (this.engagedSet.has(action)) return [];
    this.engagedSet.add(action);
    return [{ action, engaged: true, level: this.lastLevel, atMs, byOperator: true }];
  }

  /** The operator withdraws their word; the action stays engaged only if the level holds it. */
  releaseByOperator(action: A, atMs: number): LevelChange<A>[] {
    this.check(action);
    if (!this.byOperator.delete(action)) return [];
    const t = this.thresholds.find((x) => x.action === action);
    const held = t !== undefined && !t.operatorOnly && this.lastLevel >= t.releaseBelow;
    if (held) return [];
    this.engagedSet.delete(action);
    return [{ action, engaged: false, level: this.lastLevel, atMs, byOperator: true }];
  }

  private check(action: A): void {
    assert(
      this.thresholds.some((t) => t.action === action),
      () => `level ladder: unknown action ${action}`,
    );
  }
}
