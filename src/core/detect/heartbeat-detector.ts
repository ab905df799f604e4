// The common shape of a heartbeat failure detector: arrivals in, a suspicion level out, with time
// always passed in. Callers never see the model; they see a level on the φ scale (phi-formula.ts)
// and bind actions to thresholds of it (level.ts).

export interface HeartbeatDetector {
  /** Record a heartbeat (or any message that proves the peer was alive) received at `nowMs`. */
  heartbeat(nowMs: number): void;
  /** The suspicion level on the φ scale; 0 before the first heartbeat. */
  level(nowMs: number): number;
  /** Whether the level is below the detector's own threshold. */
  isAvailable(nowMs: number): boolean;
  /** Time of the last recorded heartbeat, or undefined before the first. */
  readonly lastHeartbeatMs: number | undefined;
  /**
   * Move the last-heartbeat time forward by `ms` without recording an interval: the observer was
   * stalled for `ms` and could not have heard anything (the stall guard).
   */
  shift(ms: number): void;
}
