// The simulated network: one-way delay and loss per directed link, per four trace families (N1
// quiet LAN, N2 noisy cloud, N3 burst loss, N4 heavy tail), plus the faults the scenarios inject
// (isolation, one-way and UDP-only blocks). TCP is modelled as reliable: a loss becomes a 200 ms
// retransmission instead of a drop, unless the link is blocked.

import type { Prng } from '../core/base/index.js';

export type ChannelKind = 'udp' | 'tcp';

export interface NetProfile {
  readonly name: string;
  /** Median one-way delay, ms, of a lognormal. */
  readonly delayMedianMs: number;
  /** σ of ln(delay). */
  readonly delaySigma: number;
  /** Bernoulli loss probability per packet. */
  readonly loss: number;
  /** Gilbert–Elliott burst loss per directed link: P(good→bad), P(bad→good); null: none. */
  readonly burst: { readonly pGoodToBad: number; readonly pBadToGood: number } | null;
  /** Delay spikes per node: rate per ms, extra delay range ms, spike length ms; null: none. */
  readonly spikes: {
    readonly ratePerMs: number;
    readonly extraMinMs: number;
    readonly extraMaxMs: number;
    readonly lengthMs: number;
  } | null;
  /** Heavy tail: Pareto extra delay (scale ms, shape α), capped; null: none. */
  readonly pareto: {
    readonly scaleMs: number;
    readonly alpha: number;
    readonly capMs: number;
  } | null;
  /** Bimodal: probability of the slow mode and its extra delay, ms. */
  readonly slowMode: { readonly p: number; readonly extraMs: number } | null;
  /** CPU throttling: fraction of nodes whose packets wait up to `maxMs` for their next quota. */
  readonly throttle: { readonly fraction: number; readonly maxMs: number } | null;
}

export const N1_QUIET_LAN: NetProfile = {
  name: 'N1 quiet LAN',
  delayMedianMs: 0.2,
  delaySigma: 0.5,
  loss: 0.0001,
  burst: null,
  spikes: null,
  pareto: null,
  slowMode: null,
  throttle: null,
};

/** Median 1 ms, p99 20 ms (σ = ln 20 / 2.326), spikes of 50–200 ms once a minute, 1 % loss. */
export const N2_NOISY_CLOUD: NetProfile = {
  name: 'N2 noisy cloud',
  delayMedianMs: 1,
  delaySigma: Math.log(20) / 2.326,
  loss: 0.01,
  burst: null,
  spikes: { ratePerMs: 1 / 60_000, extraMinMs: 50, extraMaxMs: 200, lengthMs: 1000 },
  pareto: null,
  slowMode: null,
  throttle: null,
};

/** Gilbert–Elliott with a mean burst of 3 packets and 0.4 % average loss. */
export const N3_BURST_LOSS: NetProfile = {
  name: 'N3 burst loss',
  delayMedianMs: 0.5,
  delaySigma: 0.7,
  loss: 0,
  burst: { pGoodToBad: (0.004 * (1 / 3)) / (1 - 0.004), pBadToGood: 1 / 3 },
  spikes: null,
  pareto: null,
  slowMode: null,
  throttle: null,
};

/** Pareto(α = 1.5) extra delay, a 10 % slow mode of +100 ms, 25 % of nodes CPU-throttled. */
export const N4_HEAVY_TAIL: NetProfile = {
  name: 'N4 heavy tail',
  delayMedianMs: 0.5,
  delaySigma: 0.5,
  loss: 0.0005,
  burst: null,
  spikes: null,
  pareto: { scaleMs: 0.5, alpha: 1.5, capMs: 5000 },
  slowMode: { p: 0.1, extraMs: 100 },
  throttle: { fraction: 0.25, maxMs: 100 },
};

/** A standard normal variate (Box–Muller) from the injected PRNG. */
export function gaussian(rng: Prng): number {
  const u = Math.max(rng.next(), 1e-12);
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export class Network {
  private readonly rng: Prng;
  private readonly bad = new Set<number>();
  private readonly spikeUntil = new Map<number, { until: number; extra: number }>();
  private readonly nextSpikeAt = new Map<number, number>();
  private readonly throttled = new Set<number>();
  /** Nodes cut off from everyone. */
  readonly isolated = new Set<number>();
  /** Directed blocks "from>to>channel" (channel 'all' blocks both). */
  private readonly blocks = new Map<string, number>();

  constructor(
    readonly profile: NetProfile,
    rng: Prng,
    slots: number,
  ) {
    this.rng = rng.fork('network');
    const t = profile.throttle;
    if (t !== null) {
      const pick = rng.fork('throttle');
      for (let i = 0; i < slots; i++) if (pick.chance(t.fraction)) this.throttled.add(i);
    }
  }

  block(from: number, to: number, channel: ChannelKind | 'all'): void {
    const k = `${from}>${to}>${channel}`;
    this.blocks.set(k, (this.blocks.get(k) ?? 0) + 1);
  }

  unblock(from: number, to: number, channel: ChannelKind | 'all'): void {
    const k = `${from}>${to}>${channel}`;
    const n = (this.blocks.get(k) ?? 0) - 1;
    if (n <= 0) this.blocks.delete(k);
    else this.blocks.set(k, n);
  }

  isBlocked(from: number, to: number, channel: ChannelKind): boolean {
    if (this.isolated.has(from) || this.isolated.has(to)) return true;
    if (this.blocks.size === 0) return false;
    return this.blocks.has(`${from}>${to}>all`) || this.blocks.has(`${from}>${to}>${channel}`);
  }

  /**
   * The one-way delay of a packet sent at `t` from `from` to `to`, ms, or null if it is lost.
   * `n` is the slot count, for the per-link burst state.
   */
  transit(t: number, from: number, to: number, channel: ChannelKind, n: number): number | null {
    if (this.isBlocked(from, to, channel)) return null;
    const p = this.profile;
    const r = this.rng;
    let lost = r.chance(p.loss);
    if (p.burst !== null) {
      const key = from * n + to;
      const isBad = this.bad.has(key);
      if (isBad ? r.chance(p.burst.pBadToGood) : r.chance(p.burst.pGoodToBad)) {
        if (isBad) this.bad.delete(key);
        else this.bad.add(key);
      }
      if (this.bad.has(key)) lost = true;
    }
    let d = p.delayMedianMs * Math.exp(p.delaySigma * gaussian(r));
    if (p.pareto !== null) {
      const x = p.pareto.scaleMs / Math.pow(1 - r.next(), 1 / p.pareto.alpha) - p.pareto.scaleMs;
      d += Math.min(x, p.pareto.capMs);
    }
    if (p.slowMode !== null && r.chance(p.slowMode.p)) d += p.slowMode.extraMs;
    if (p.throttle !== null) {
      if (this.throttled.has(from)) d += r.next() * p.throttle.maxMs;
      if (this.throttled.has(to)) d += r.next() * p.throttle.maxMs;
    }
    if (p.spikes !== null) d += this.spike(t, from);
    if (lost) {
      if (channel === 'udp') return null;
      d += 200; // TCP retransmission timeout.
    }
    return d;
  }

  private spike(t: number, node: number): number {
    const s = this.profile.spikes;
    if (s === null) return 0;
    let next = this.nextSpikeAt.get(node);
    if (next === undefined) {
      next = t + this.rng.exp(1 / s.ratePerMs);
      this.nextSpikeAt.set(node, next);
    }
    if (t >= next) {
      const extra = s.extraMinMs + this.rng.next() * (s.extraMaxMs - s.extraMinMs);
      this.spikeUntil.set(node, { until: next + s.lengthMs, extra });
      this.nextSpikeAt.set(node, next + this.rng.exp(1 / s.ratePerMs));
    }
    const cur = this.spikeUntil.get(node);
    return cur !== undefined && t < cur.until ? cur.extra : 0;
  }
}
