// When the nemesis ran a member's clock at a skewed rate (libfaketime, faults-clock), on the run's
// clock. The lease contract (src/check/lease-contract.ts) holds the server to a bound on clock-rate
// error; a member run at ×2 breaks any such bound on purpose, so a lease renewal whose promise
// overlaps such a window is judged with the drift that window allowed (×2: a TTL lasts at least
// half its length), and every other renewal with the documented default. Safety that does not
// rest on clocks (linearizability, tokens, watch order) is judged the same in every window.
import { DRIFT_RATIO_DEFAULT } from '../check/lease-contract.js';

export interface ClockWindow {
  readonly member: number;
  /** The clock's rate against true time (2: twice as fast, 0.5: half as fast). */
  readonly rate: number;
  readonly fromMs: number;
  /** Infinity while the member still runs skewed. */
  toMs: number;
}

export class ClockWindows {
  readonly windows: ClockWindow[] = [];

  /** Member `member` runs from now on with its clock at `rate`. */
  begin(member: number, rate: number, atMs = performance.now()): void {
    this.windows.push({ member, rate, fromMs: atMs, toMs: Infinity });
  }

  /** Member `member`'s clock is true again (it was restarted without skew, or stopped). */
  end(member: number, atMs = performance.now()): void {
    for (const w of this.windows) if (w.member === member && w.toMs === Infinity) w.toMs = atMs;
  }

  /**
   * The drift ratio to judge a promise made over [fromMs, toMs] with: the largest rate error of a
   * window that overlaps it (a clock at ×r is off by |r − 1|, and a slow one by 1/r − 1 when the
   * grantor is the fast side), else the documented default.
   */
  driftRatioDuring(fromMs: number, toMs: number): number {
    let d = DRIFT_RATIO_DEFAULT;
    for (const w of this.windows) {
      if (w.fromMs > toMs || w.toMs < fromMs) continue;
      d = Math.max(d, Math.abs(w.rate - 1), Math.abs(1 / w.rate - 1));
    }
    return d;
  }
}
