// The QoS metrics of Chen, Toueg and Aguilera ("On the Quality of Service of Failure Detectors",
// IEEE Trans. Computers, 2002) and our additions for a membership layer, computed online from the
// ground truth the simulator knows and the verdicts every observer reports: detection time (first
// observer and all members), false `dead`, Chen's mistake rate λ_M and query accuracy P_A, flaps,
// pause tolerance, stale accusations after an observer's stall, link-level detection, convergence,
// and load.

import type { VerdictStatus } from './detectors.js';

const UNKNOWN = 0;
const ALIVE = 1;
const SUSPECT = 2;
const DEAD = 3;
const LEFT = 4;

const CODE: Record<VerdictStatus, number> = {
  alive: ALIVE,
  suspect: SUSPECT,
  dead: DEAD,
  left: LEFT,
};

/** The stop length beyond which `dead` is an acceptable verdict (the P* every detector is set to). */
export const PAUSE_REFERENCE_MS = 3000;
/** After a long stop ends, verdicts within this window are still excused. */
const EXCUSE_AFTER_MS = 10_000;
/** A target counts as responsive again this long after a stop ends. */
const SETTLE_MS = 2000;
/** Accusations by an observer this soon after its own stall come from stale data. */
const STALE_WINDOW_MS = 5000;

interface Stop {
  readonly kind: 'pause' | 'stall' | 'outage';
  readonly start: number;
  end: number | null;
  deadSeen: boolean;
  stale: number;
  staleDead: number;
  refuteMs: number | null;
}

interface Episode {
  readonly slot: number;
  readonly at: number;
  readonly observers: Set<number>;
  readonly detected: Map<number, number>;
}

interface LinkCut {
  readonly a: number;
  readonly b: number;
  readonly start: number;
  detectedMs: number | null;
}

export interface StopSample {
  readonly kind: 'pause' | 'stall' | 'outage';
  readonly lengthMs: number;
  readonly dead: boolean;
  readonly staleAccusations: number;
  readonly staleDead: number;
  readonly refuteMs: number | null;
}

export interface RunMetrics {
  readonly nodeHours: number;
  readonly detectionFirstMs: number[];
  readonly detectionAllMs: number[];
  readonly detectionCensored: number;
  readonly falseDead: number;
  readonly falseDeadHealthy: number;
  readonly falseDeadIncidents: number;
  readonly mistakes: number;
  readonly mistakeMs: number;
  readonly pairHours: number;
  readonly flaps: number;
  readonly packets: number;
  readonly stops: StopSample[];
  readonly linkDetectMs: number[];
  readonly linkCuts: number;
  readonly convergenceMs: number | null;
  readonly degradedTransitions: number;
  readonly degradedObserverHours: number;
}

export class Recorder {
  private readonly views: Uint8Array[];
  private readonly up: Uint8Array;
  private readonly degraded: Uint8Array;
  private readonly stops: Stop[][];
  private readonly allStops: Stop[] = [];
  private readonly mistakeStart: Float64Array;
  private readonly accusedBy: Int32Array;
  private readonly episodes = new Map<number, Episode>();
  private readonly cuts: LinkCut[] = [];
  private readonly incidentUntil: Float64Array;
  private detectionFirst: number[] = [];
  private detectionAll: number[] = [];
  private censored = 0;
  private falseDead = 0;
  private falseDeadHealthy = 0;
  private incidents = 0;
  private mistakes = 0;
  private mistakeMs = 0;
  private flaps = 0;
  private packets = 0;
  private upCount = 0;
  private lastT = 0;
  private upNodeMs = 0;
  private pairMs = 0;
  private degradedObsMs = 0;
  private degradedCount = 0;
  private degradedTransitions = 0;
  private convergenceMs: number | null = null;
  private recording = false;

  constructor(
    readonly slots: number,
    private readonly trace?: (t: number, line: string) => void,
  ) {
    this.views = Array.from({ length: slots }, () => new Uint8Array(slots));
    this.up = new Uint8Array(slots);
    this.degraded = new Uint8Array(slots);
    this.stops = Array.from({ length: slots }, () => []);
    this.mistakeStart = new Float64Array(slots * slots).fill(-1);
    this.accusedBy = new Int32Array(slots);
    this.incidentUntil = new Float64Array(slots);
  }

  /** Metrics count from `t` on (after the cluster formed). */
  startRecording(t: number): void {
    this.advance(t);
    this.recording = true;
  }

  get isRecording(): boolean {
    return this.recording;
  }

  // --- ground truth ----------------------------------------------------------------------------

  setUp(slot: number, isUp: boolean, t: number): void {
    this.advance(t);
    if ((this.up[slot] === 1) === isUp) return;
    this.up[slot] = isUp ? 1 : 0;
    this.upCount += isUp ? 1 : -1;
    if (!isUp) {
      // Close the observer's open mistakes and forget its view: a new process starts empty.
      for (let x = 0; x < this.slots; x++) this.closeMistake(slot, x, t);
      const v = this.views[slot] as Uint8Array;
      for (let x = 0; x < this.slots; x++) {
        if (v[x] === SUSPECT || v[x] === DEAD)
          this.accusedBy[x] = (this.accusedBy[x] as number) - 1;
      }
      v.fill(UNKNOWN);
      // Mistakes about the target end: from now on suspecting it is right.
      for (let o = 0; o < this.slots; o++) this.closeMistake(o, slot, t);
    }
  }

  setDegraded(slot: number, d: boolean, t: number): void {
    this.advance(t);
    if ((this.degraded[slot] === 1) === d) return;
    this.degraded[slot] = d ? 1 : 0;
    this.degradedCount += d ? 1 : -1;
  }

  stopStart(slot: number, kind: Stop['kind'], t: number): void {
    const s: Stop = {
      kind,
      start: t,
      end: null,
      deadSeen: false,
      stale: 0,
      staleDead: 0,
      refuteMs: null,
    };
    (this.stops[slot] as Stop[]).push(s);
    if (this.recording) this.allStops.push(s);
  }

  stopEnd(slot: number, t: number): void {
    const list = this.stops[slot] as Stop[];
    const s = list[list.length - 1];
    if (s !== undefined && s.end === null) {
      s.end = t;
      if (this.accusedBy[slot] === 0) s.refuteMs = 0;
    }
  }

  crash(slot: number, t: number, measure: boolean): void {
    this.setUp(slot, false, t);
    if (!this.recording || !measure) return;
    const observers = new Set<number>();
    const ep: Episode = { slot, at: t, observers, detected: new Map() };
    for (let o = 0; o < this.slots; o++) {
      if (o === slot || this.up[o] !== 1 || this.stoppedAt(o, t)) continue;
      const v = (this.views[o] as Uint8Array)[slot];
      // An observer that never heard of the member (a joiner that died young) has nothing to agree on.
      if (v === UNKNOWN) continue;
      observers.add(o);
      if (v === DEAD || v === LEFT) ep.detected.set(o, 0);
    }
    this.episodes.set(slot, ep);
  }

  /** The crashed slot runs again (or the run ends): close its detection episode. */
  closeEpisode(slot: number, t: number): void {
    const ep = this.episodes.get(slot);
    if (ep === undefined) return;
    this.episodes.delete(slot);
    if (ep.observers.size === 0) return;
    let first = Infinity;
    let all = 0;
    let missing = false;
    for (const o of ep.observers) {
      const d = ep.detected.get(o);
      if (d === undefined) {
        if (this.up[o] === 1) missing = true;
        continue;
      }
      first = Math.min(first, d);
      all = Math.max(all, d);
    }
    const window = t - ep.at;
    if (first === Infinity) {
      this.censored++;
      this.detectionFirst.push(window);
      this.detectionAll.push(window);
      return;
    }
    if (missing) {
      this.censored++;
      all = window;
    }
    this.detectionFirst.push(first);
    this.detectionAll.push(all);
  }

  cutStart(a: number, b: number, t: number): void {
    if (this.recording) this.cuts.push({ a, b, start: t, detectedMs: null });
  }

  packet(): void {
    if (this.recording) this.packets++;
  }

  // --- observations -----------------------------------------------------------------------------

  verdict(t: number, o: number, x: number, status: VerdictStatus, own = true): void {
    this.advance(t);
    if (o === x || this.up[o] !== 1) return;
    const v = this.views[o] as Uint8Array;
    const prev = v[x] as number;
    const next = CODE[status];
    if (prev === next) return;
    v[x] = next;
    const wasAccusing = prev === SUSPECT || prev === DEAD;
    const accusing = next === SUSPECT || next === DEAD;
    if (wasAccusing !== accusing)
      this.accusedBy[x] = (this.accusedBy[x] as number) + (accusing ? 1 : -1);
    if (this.up[x] === 1 && this.accusedBy[x] === 0) this.noteRefuted(x, t);

    if (this.up[x] !== 1) {
      const ep = this.episodes.get(x);
      if (
        ep !== undefined &&
        (next === DEAD || next === LEFT) &&
        ep.observers.has(o) &&
        !ep.detected.has(o)
      ) {
        ep.detected.set(o, t - ep.at);
      }
      return;
    }
    if (!this.recording) return;
    if (this.degraded[x] === 1 || this.degraded[o] === 1) this.degradedTransitions++;
    const observerStopped = this.stoppedAt(o, t);
    const staleStop = this.recentStopEnd(o, t);
    if (accusing && !wasAccusing && own && staleStop !== undefined && this.responsive(x, t)) {
      staleStop.stale++;
      if (next === DEAD) staleStop.staleDead++;
    }
    if (next === DEAD) this.markDeadDuringStop(x, t);
    if (next === DEAD && prev !== DEAD && !observerStopped && !this.excused(x, t)) {
      this.trace?.(t, `FALSE DEAD n${x} at n${o}`);
      this.falseDead++;
      if (this.degraded[x] !== 1) this.falseDeadHealthy++;
      if (t >= (this.incidentUntil[x] as number)) this.incidents++;
      this.incidentUntil[x] = t + 30_000;
    }
    if (accusing && !wasAccusing && !observerStopped && this.responsive(x, t)) {
      this.mistakes++;
      this.mistakeStart[o * this.slots + x] = t;
    }
    if (!accusing && wasAccusing) {
      // A flap is a wrong accusation taken back; a restarted member coming back is not one.
      const k = o * this.slots + x;
      if (next === ALIVE && (this.mistakeStart[k] as number) >= 0) this.flaps++;
      this.closeMistake(o, x, t);
    }
  }

  link(t: number, o: number, x: number, unreachable: boolean): void {
    if (!unreachable) return;
    for (const c of this.cuts) {
      if (
        c.detectedMs === null &&
        ((c.a === o && c.b === x) || (c.a === x && c.b === o)) &&
        t >= c.start
      ) {
        c.detectedMs = t - c.start;
      }
    }
  }

  /** Whether every up observer sees every other up node as alive (mass restart). */
  converged(upSlots: readonly number[]): boolean {
    for (const o of upSlots) {
      const v = this.views[o] as Uint8Array;
      for (const x of upSlots) if (x !== o && v[x] !== ALIVE) return false;
    }
    return true;
  }

  setConvergence(ms: number): void {
    this.convergenceMs = ms;
  }

  finish(t: number): RunMetrics {
    this.advance(t);
    for (const slot of [...this.episodes.keys()]) this.closeEpisode(slot, t);
    for (let o = 0; o < this.slots; o++)
      for (let x = 0; x < this.slots; x++) this.closeMistake(o, x, t);
    return {
      nodeHours: this.upNodeMs / 3_600_000,
      detectionFirstMs: this.detectionFirst,
      detectionAllMs: this.detectionAll,
      detectionCensored: this.censored,
      falseDead: this.falseDead,
      falseDeadHealthy: this.falseDeadHealthy,
      falseDeadIncidents: this.incidents,
      mistakes: this.mistakes,
      mistakeMs: this.mistakeMs,
      pairHours: this.pairMs / 3_600_000,
      flaps: this.flaps,
      packets: this.packets,
      stops: this.allStops.map((s) => ({
        kind: s.kind,
        lengthMs: (s.end ?? t) - s.start,
        dead: s.deadSeen,
        staleAccusations: s.stale,
        staleDead: s.staleDead,
        refuteMs: s.refuteMs,
      })),
      linkDetectMs: this.cuts
        .filter((c) => c.detectedMs !== null)
        .map((c) => c.detectedMs as number),
      linkCuts: this.cuts.length,
      convergenceMs: this.convergenceMs,
      degradedTransitions: this.degradedTransitions,
      degradedObserverHours: this.degradedObsMs / 3_600_000,
    };
  }

  // --- helpers ----------------------------------------------------------------------------------

  private advance(t: number): void {
    if (t <= this.lastT) return;
    if (this.recording) {
      const dt = t - this.lastT;
      this.upNodeMs += this.upCount * dt;
      this.pairMs += this.upCount * Math.max(0, this.upCount - 1) * dt;
      this.degradedObsMs += this.degradedCount * dt;
    }
    this.lastT = t;
  }

  private closeMistake(o: number, x: number, t: number): void {
    const k = o * this.slots + x;
    const s = this.mistakeStart[k] as number;
    if (s >= 0) {
      this.mistakeMs += t - s;
      this.mistakeStart[k] = -1;
    }
  }

  private stoppedAt(slot: number, t: number): boolean {
    const list = this.stops[slot] as Stop[];
    const s = list[list.length - 1];
    return s !== undefined && s.start <= t && (s.end === null || t < s.end);
  }

  private recentStopEnd(slot: number, t: number): Stop | undefined {
    const list = this.stops[slot] as Stop[];
    const s = list[list.length - 1];
    if (s === undefined || s.end === null || s.kind === 'outage') return undefined;
    return t >= s.end && t - s.end <= STALE_WINDOW_MS ? s : undefined;
  }

  /** A target stopped (or cut off) longer than P*, now or within the last 10 s, may be `dead`. */
  private excused(x: number, t: number): boolean {
    for (const s of this.stops[x] as Stop[]) {
      if (s.start > t) continue;
      const end = s.end ?? t;
      if (end - s.start > PAUSE_REFERENCE_MS && t <= end + EXCUSE_AFTER_MS) return true;
    }
    return false;
  }

  /** A target that is running and has not been stopped in the last two seconds. */
  private responsive(x: number, t: number): boolean {
    const list = this.stops[x] as Stop[];
    const s = list[list.length - 1];
    return s === undefined || (s.end !== null && t - s.end >= SETTLE_MS);
  }

  private markDeadDuringStop(x: number, t: number): void {
    for (const s of this.stops[x] as Stop[]) {
      if (s.start <= t && (s.end === null || t <= s.end + EXCUSE_AFTER_MS)) s.deadSeen = true;
    }
  }

  private noteRefuted(x: number, t: number): void {
    const list = this.stops[x] as Stop[];
    const s = list[list.length - 1];
    if (s !== undefined && s.end !== null && s.refuteMs === null && t >= s.end)
      s.refuteMs = t - s.end;
  }
}
