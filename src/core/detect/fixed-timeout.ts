// The fixed-timeout heartbeat detector: suspect after k heartbeat intervals of silence. It is the
// baseline every accrual paper compares against, and Akka's DeadlineFailureDetector (deadline =
// heartbeat interval + acceptable pause).

import { assert } from '../base/index.js';
import type { HeartbeatDetector } from './heartbeat-detector.js';

export interface FixedTimeoutConfig {
  /** Expected time between heartbeats, ms. */
  readonly heartbeatIntervalMs: number;
  /** Suspect after `k` intervals of silence; k = 1 + pause / interval gives Akka's deadline. */
  readonly k: number;
  /** The φ-scale level reported when the timeout is reached (level.ts); 8 matches Akka's φ. */
  readonly thresholdLevel: number;
}

export const FIXED_TIMEOUT_DEFAULTS: FixedTimeoutConfig = {
  heartbeatIntervalMs: 1000,
  k: 4,
  thresholdLevel: 8,
};

/** The timeout in ms: k × heartbeat interval. */
export function fixedTimeoutMs(config: FixedTimeoutConfig): number {
  return config.k * config.heartbeatIntervalMs;
}

/**
 * The level of a fixed timeout on the φ scale: a linear ramp from 0 at the last heartbeat to
 * `thresholdLevel` at the timeout, so that "level ≥ threshold" is exactly "silence ≥ timeout".
 */
export function fixedTimeoutLevel(silenceMs: number, timeoutMs: number, thresholdLevel: number) {
  if (silenceMs <= 0) return 0;
  return (thresholdLevel * silenceMs) / timeoutMs;
}

export class FixedTimeoutDetector implements HeartbeatDetector {
  private last: number | undefined;
  private readonly timeoutMs: number;

  constructor(readonly config: FixedTimeoutConfig = FIXED_TIMEOUT_DEFAULTS) {
    assert(config.heartbeatIntervalMs > 0, 'fixed timeout: heartbeatIntervalMs must be > 0');
    assert(config.k > 0, 'fixed timeout: k must be > 0');
    this.timeoutMs = fixedTimeoutMs(config);
  }

  get lastHeartbeatMs(): number | undefined {
    return this.last;
  }

  heartbeat(nowMs: number): void {
    this.last = this.last === undefined ? nowMs : Math.max(this.last, nowMs);
  }

  level(nowMs: number): number {
    if (this.last === undefined) return 0;
    return fixedTimeoutLevel(nowMs - this.last, this.timeoutMs, this.config.thresholdLevel);
  }

  isAvailable(nowMs: number): boolean {
    return this.last === undefined || nowMs - this.last < this.timeoutMs;
  }

  shift(ms: number): void {
    if (this.last !== undefined) this.last += ms;
  }
}
