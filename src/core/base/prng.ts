// A small seeded PRNG (sfc32) with independent named streams. A root seed derives one stream per
// consumer (network, each node's election timer, the workload, the nemesis), so that changing one
// consumer's draws does not shift the others' — which keeps replays and shrinking stable.

export interface Prng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi). */
  int(lo: number, hi: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
  /** An exponentially distributed float with the given mean. */
  exp(mean: number): number;
  /** A new independent stream derived from this one's seed and a name. */
  fork(name: string): Prng;
  readonly seed: number;
}

function hashString(s: string, h = 2166136261): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h >>> 0;
}

/** splitmix32: spreads a 32-bit seed into well-mixed state words. */
function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

class Sfc32 implements Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    const mix = splitmix32(seed);
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = 1;
    for (let i = 0; i < 12; i++) this.u32();
  }

  private u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.u32() / 4294967296;
  }

  int(lo: number, hi: number): number {
    if (hi <= lo) throw new RangeError(`prng.int: empty range [${lo}, ${hi})`);
    return lo + Math.floor(this.next() * (hi - lo));
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('prng.pick: empty array');
    return items[this.int(0, items.length)] as T;
  }

  exp(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  fork(name: string): Prng {
    return new Sfc32(hashString(name, this.seed ^ 0x5bd1e995));
  }
}

export function prng(seed: number): Prng {
  return new Sfc32(seed >>> 0);
}

export { hashString };
