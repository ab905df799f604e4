// The follower's detector on its leader's heartbeats (issue 19): silence without evidence is
// judged here, so that a pause of the leader up to `pauseToleranceMs` causes no election while a
// longer silence is acted on without waiting out the whole randomized election timeout (raft.ts,
// pauseTicks, is the ceiling). Either detector of src/core/detect: φ accrual (Hayashibara et al.,
// SRDS 2004) with the tolerated pause added to the mean, as Akka's acceptable-heartbeat-pause
// does, or a fixed timeout (Akka's DeadlineFailureDetector). Both are fed every message the
// leader sends us and shifted over this process's own stalls (it heard nothing while stopped).
import { assert } from '../core/base/assert.js';
import type { NodeId } from '../core/base/units.js';
import { NONE } from '../core/base/units.js';
import { FixedTimeoutDetector } from '../core/detect/fixed-timeout.js';
import type { HeartbeatDetector } from '../core/detect/heartbeat-detector.js';
import { PhiAccrualDetector } from '../core/detect/phi-accrual.js';

export type LeaderDetectorKind = 'phi' | 'fixed';

export interface LeaderWatchConfig {
  readonly kind: LeaderDetectorKind;
  readonly heartbeatMs: number;
  /** The longest silence of the leader that must not start an election, in ms. */
  readonly pauseToleranceMs: number;
}

/** φ at which the leader counts as silent: Akka's and Cassandra's suspicion threshold. */
export const LEADER_PHI_THRESHOLD = 8;
/** Intervals the φ window keeps: about 10 s of heartbeats at 100 ms. */
const LEADER_PHI_WINDOW = 100;

/**
 * The detector for one leader. φ: σ is floored at half a heartbeat, so on a steady loopback link
 * φ = 8 (z ≈ 5.6) is reached at mean + pause + 2.8 heartbeats: 1.88 s at 100 ms and 1.5 s. The
 * fixed timeout fires at pause + two heartbeats (the last heartbeat before a pause may have
 * arrived up to one interval before it began).
 */
function detectorFor(c: LeaderWatchConfig): HeartbeatDetector {
  if (c.kind === 'fixed') {
    return new FixedTimeoutDetector({
      heartbeatIntervalMs: c.heartbeatMs,
      k: 2 + c.pauseToleranceMs / c.heartbeatMs,
      thresholdLevel: LEADER_PHI_THRESHOLD,
    });
  }
  return new PhiAccrualDetector({
    model: 'normal',
    threshold: LEADER_PHI_THRESHOLD,
    windowSize: LEADER_PHI_WINDOW,
    minStdDevMs: c.heartbeatMs / 2,
    acceptablePauseMs: c.pauseToleranceMs,
    bootstrapIntervalsMs: [c.heartbeatMs * 0.75, c.heartbeatMs * 1.25],
    maxRecordedIntervalMs: Infinity,
    // A message after a long silence (a paused leader waking) is not a sample of its rate.
    skipIntervalWhenUnavailable: true,
  });
}

export class LeaderWatch {
  private leader: NodeId = NONE;
  private detector: HeartbeatDetector | undefined;

  constructor(private readonly config: LeaderWatchConfig) {
    assert(config.heartbeatMs > 0, 'leader watch: heartbeatMs must be > 0');
    assert(config.pauseToleranceMs > 0, 'leader watch: pauseToleranceMs must be > 0');
  }

  /** A message from `leader` arrived at `nowMs`; a new leader starts a fresh history. */
  heard(leader: NodeId, nowMs: number): void {
    if (leader !== this.leader || this.detector === undefined) {
      this.leader = leader;
      this.detector = detectorFor(this.config);
    }
    this.detector.heartbeat(nowMs);
  }

  /** This process was stalled for `ms`: that silence was ours, not the leader's. */
  shift(ms: number): void {
    this.detector?.shift(ms);
  }

  /** Whether `leader` has been silent past the tolerated pause, by the detector. */
  silent(leader: NodeId, nowMs: number): boolean {
    if (leader !== this.leader || this.detector === undefined) return false;
    return !this.detector.isAvailable(nowMs);
  }

  /** The detector's level for `leader` on the φ scale (0 for another leader or none yet). */
  level(leader: NodeId, nowMs: number): number {
    if (leader !== this.leader || this.detector === undefined) return 0;
    return this.detector.level(nowMs);
  }
}
