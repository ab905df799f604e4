// Lifeguard's local health multiplier (LHM, §IV.A "Local Health Aware Probe"): a saturating score
// of how much this node distrusts itself. Failed probes, missing nacks and having to refute a
// suspicion about ourselves raise it; successful probes lower it. Timeouts are multiplied by
// (score + 1), so a slow or overloaded node waits longer before accusing anyone.

import { assert } from '../../base/index.js';

export class Awareness {
  private score = 0;

  /** `max`: the score saturates at max − 1 (memberlist's AwarenessMaxMultiplier); ≤ 1 disables. */
  constructor(readonly max: number) {
    assert(Number.isInteger(max) && max >= 0, 'awareness: max must be an integer ≥ 0');
  }

  get health(): number {
    return this.score;
  }

  /** Add `delta` (±), saturating in [0, max − 1]. Returns the new score. */
  apply(delta: number): number {
    const top = Math.max(0, this.max - 1);
    this.score = Math.min(top, Math.max(0, this.score + delta));
    return this.score;
  }

  /** timeout × (score + 1). */
  scale(timeoutMs: number): number {
    return timeoutMs * (this.score + 1);
  }
}
