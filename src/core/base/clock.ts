// The one monotonic clock interface, for everything that measures durations or waits: the
// replica and member (src/server/clock.ts on the machine, the simulator's per-node clocks) and
// the SDK's session (src/client/clock.ts). Only monotonic time: a wall-clock step must neither
// expire a lease nor start an election (docs/leases-and-time.md, "The clock assumption").

/** Stops a timer; calling it again, or after the timer ran, does nothing. */
export type Cancel = () => void;

export interface Clock {
  /** Monotonic milliseconds since an arbitrary origin. */
  nowMs(): number;
  /** Call `fn` once after `delayMs`. */
  after(delayMs: number, fn: () => void): Cancel;
  /** Call `fn` every `intervalMs` until cancelled. */
  every(intervalMs: number, fn: () => void): Cancel;
}
