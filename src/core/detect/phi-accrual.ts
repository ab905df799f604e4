// The φ accrual failure detector (Hayashibara, Défago, Yared, Katayama, SRDS 2004), with the knobs
// production added: a windowed interval history, a floor on the standard deviation, an acceptable
// pause, a warm-up estimate for the first samples, a cap above which intervals are not recorded,
// and Akka's rule that a heartbeat arriving after the detector gave up is not learned from
// (akka-remote's PhiAccrualFailureDetector.scala; Cassandra's gms/FailureDetector.java).
//
// One class covers tenure's watch and the calibrated baselines; the presets below name them.

import { assert } from '../base/index.js';
import type { HeartbeatDetector } from './heartbeat-detector.js';
import { IntervalWindow } from './interval-window.js';
import { phiExponential, phiLogistic, phiNormal } from './phi-formula.js';

export type PhiModel = 'normal' | 'logistic' | 'exponential';

export interface PhiAccrualConfig {
  /** The distribution of inter-arrival times: exact normal, Akka's logistic, Cassandra's exponential. */
  readonly model: PhiModel;
  /** Suspect when φ ≥ threshold. Akka 8; Cassandra 8 (i.e. 18.4 mean intervals). Range 1–16. */
  readonly threshold: number;
  /** Intervals kept in the window. Akka 1000, Cassandra 1000. More: steadier, slower to adapt. */
  readonly windowSize: number;
  /** Floor on σ, ms: keeps a very regular link from turning a late packet into certainty. Akka 100. */
  readonly minStdDevMs: number;
  /** Added to the mean, ms: the stop-the-world pause to tolerate without suspicion. Akka 3000. */
  readonly acceptablePauseMs: number;
  /**
   * Intervals seeded into the empty window so the first heartbeats are judged sensibly. Akka seeds
   * two at mean ± mean/4 (σ = mean/4); Cassandra one at twice the gossip interval.
   */
  readonly bootstrapIntervalsMs: readonly number[];
  /** Intervals above this are not recorded (Cassandra's MAX_INTERVAL); Infinity: record all. */
  readonly maxRecordedIntervalMs: number;
  /** Akka: a heartbeat that arrives while φ ≥ threshold is not added to the history. */
  readonly skipIntervalWhenUnavailable: boolean;
}

/** Akka Cluster's defaults (reference.conf): fires ≈ 4.52 s after the last heartbeat. */
export function akkaPhiConfig(heartbeatIntervalMs = 1000): PhiAccrualConfig {
  return {
    model: 'logistic',
    threshold: 8,
    windowSize: 1000,
    minStdDevMs: 100,
    acceptablePauseMs: 3000,
    bootstrapIntervalsMs: [heartbeatIntervalMs * 0.75, heartbeatIntervalMs * 1.25],
    maxRecordedIntervalMs: Infinity,
    skipIntervalWhenUnavailable: true,
  };
}

/** Cassandra's defaults: exponential model, threshold 8, MAX_INTERVAL 2 s, seeded at 2 s. */
export function cassandraPhiConfig(gossipIntervalMs = 1000): PhiAccrualConfig {
  return {
    model: 'exponential',
    threshold: 8,
    windowSize: 1000,
    minStdDevMs: 0,
    acceptablePauseMs: 0,
    bootstrapIntervalsMs: [2 * gossipIntervalMs],
    maxRecordedIntervalMs: 2 * gossipIntervalMs,
    skipIntervalWhenUnavailable: false,
  };
}

export class PhiAccrualDetector implements HeartbeatDetector {
  private readonly window: IntervalWindow;
  private last: number | undefined;

  constructor(readonly config: PhiAccrualConfig) {
    assert(config.threshold > 0, 'phi accrual: threshold must be > 0');
    assert(config.minStdDevMs >= 0, 'phi accrual: minStdDevMs must be ≥ 0');
    assert(config.acceptablePauseMs >= 0, 'phi accrual: acceptablePauseMs must be ≥ 0');
    assert(config.bootstrapIntervalsMs.length > 0, 'phi accrual: needs a bootstrap interval');
    this.window = new IntervalWindow(config.windowSize);
    this.seed();
  }

  get lastHeartbeatMs(): number | undefined {
    return this.last;
  }

  /** Samples in the window, bootstrap included. */
  get sampleCount(): number {
    return this.window.count;
  }

  get meanMs(): number {
    return this.window.meanMs;
  }

  get stdDevMs(): number {
    return this.window.stdDevMs;
  }

  heartbeat(nowMs: number): void {
    const last = this.last;
    if (last !== undefined && nowMs > last) {
      const interval = nowMs - last;
      const learn =
        interval <= this.config.maxRecordedIntervalMs &&
        !(this.config.skipIntervalWhenUnavailable && !this.isAvailable(nowMs));
      if (learn) this.window.add(interval);
    }
    if (last === undefined || nowMs > last) this.last = nowMs;
  }

  level(nowMs: number): number {
    if (this.last === undefined) return 0;
    return this.phiAt(nowMs - this.last);
  }

  /** φ after `silenceMs` of silence, under the current statistics. */
  phiAt(silenceMs: number): number {
    const c = this.config;
    switch (c.model) {
      case 'normal':
        return phiNormal(silenceMs, this.window, c.acceptablePauseMs, c.minStdDevMs);
      case 'logistic':
        return phiLogistic(silenceMs, this.window, c.acceptablePauseMs, c.minStdDevMs);
      case 'exponential':
        return phiExponential(silenceMs, this.window);
    }
  }

  isAvailable(nowMs: number): boolean {
    return this.level(nowMs) < this.config.threshold;
  }

  shift(ms: number): void {
    if (this.last !== undefined) this.last += ms;
  }

  /** Proof of life that is not a heartbeat (an ack): restart the silence, learn no interval. */
  touch(nowMs: number): void {
    if (this.last === undefined || nowMs > this.last) this.last = nowMs;
  }

  /** Forget the history (a new incarnation of the peer): back to the bootstrap estimate. */
  reset(): void {
    this.window.clear();
    this.last = undefined;
    this.seed();
  }

  private seed(): void {
    for (const v of this.config.bootstrapIntervalsMs) this.window.add(v);
  }
}
