// SWIM's round-robin probe selection (§4.3 "Round-Robin Probe Target Selection"): walk a list of
// members shuffled once per pass, and insert newcomers at random positions, so every member is
// probed once per pass and the worst-case time to first probe a failed member is bounded (2n − 1
// periods), while the expected time stays that of random choice.

import type { Prng } from '../../base/index.js';

export class ProbeOrder {
  private list: string[] = [];
  private index = 0;
  private readonly known = new Set<string>();

  constructor(private readonly rng: Prng) {}

  get size(): number {
    return this.known.size;
  }

  /** Insert a member at a uniformly random position of the current pass. */
  add(name: string): void {
    if (this.known.has(name)) return;
    this.known.add(name);
    const at = this.rng.int(0, this.list.length + 1);
    this.list.splice(at, 0, name);
    if (at < this.index) this.index++;
  }

  remove(name: string): void {
    if (!this.known.delete(name)) return;
    const at = this.list.indexOf(name);
    if (at >= 0) {
      this.list.splice(at, 1);
      if (at < this.index) this.index--;
    }
  }

  /** The next member for which `eligible` holds, or undefined after a full fruitless pass. */
  next(eligible: (name: string) => boolean): string | undefined {
    for (let tried = 0; tried < this.list.length; tried++) {
      if (this.index >= this.list.length) this.reshuffle();
      const name = this.list[this.index++];
      if (name !== undefined && eligible(name)) return name;
    }
    return undefined;
  }

  private reshuffle(): void {
    // Fisher–Yates with the injected PRNG.
    for (let i = this.list.length - 1; i > 0; i--) {
      const j = this.rng.int(0, i + 1);
      const a = this.list[i] as string;
      this.list[i] = this.list[j] as string;
      this.list[j] = a;
    }
    this.index = 0;
  }
}
