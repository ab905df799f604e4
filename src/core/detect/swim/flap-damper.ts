// BGP-style flap damping of a member's visible state (RFC 2439's scheme, as ringpop applied it to
// membership; uber-node/ringpop-node#11). Each time a member leaves `alive` it gains a penalty
// that decays exponentially; at `suppressAt` it is held at `suspect` (quarantined) even when it
// comes back, until the penalty decays below `reuseBelow`. A flapping member then produces at most
// a few visible events instead of one per flap.

import type { FlapDampingConfig } from './config.js';

/** Penalty after decaying `p` for `elapsedMs` with the given half-life. */
export function decayedPenalty(p: number, elapsedMs: number, halfLifeMs: number): number {
  if (elapsedMs <= 0) return p;
  return p * Math.pow(0.5, elapsedMs / halfLifeMs);
}

/** Time until `p` decays below `target`, ms (0 if already below). */
export function timeToDecayMs(p: number, target: number, halfLifeMs: number): number {
  if (p < target) return 0;
  return halfLifeMs * Math.log2(p / target) + 1;
}

export class FlapDamper {
  private penalty = 0;
  private atMs = 0;
  private held = false;

  constructor(readonly config: FlapDampingConfig) {}

  get suppressed(): boolean {
    return this.held;
  }

  penaltyAt(nowMs: number): number {
    return decayedPenalty(this.penalty, nowMs - this.atMs, this.config.halfLifeMs);
  }

  /** The member left `alive`. Returns whether it is (now) suppressed. */
  flap(nowMs: number): boolean {
    this.penalty = this.penaltyAt(nowMs) + this.config.penalty;
    this.atMs = nowMs;
    if (this.penalty >= this.config.suppressAt) this.held = true;
    return this.held;
  }

  /** Re-evaluate: lift the suppression once the penalty has decayed. Returns whether it was lifted. */
  release(nowMs: number): boolean {
    if (this.held && this.penaltyAt(nowMs) < this.config.reuseBelow) {
      this.held = false;
      return true;
    }
    return false;
  }

  /** When the suppression can next be lifted, ms; Infinity if not suppressed. */
  releaseAtMs(): number {
    if (!this.held) return Infinity;
    return this.atMs + timeToDecayMs(this.penalty, this.config.reuseBelow, this.config.halfLifeMs);
  }
}
