// The scenarios of the evaluation: the trace families of network.ts under a catalogue of faults.
// Each builds its fault schedule from a seeded PRNG, so every detector meets exactly the same
// crashes, pauses and cuts. `scale` shrinks durations and sample counts for the quick run; the
// full run keeps at least ~60 crash samples per cell.

import type { Prng } from '../core/base/index.js';
import {
  N1_QUIET_LAN,
  N2_NOISY_CLOUD,
  N3_BURST_LOSS,
  N4_HEAVY_TAIL,
  type NetProfile,
} from './network.js';
import type { Fault } from './sim.js';

export interface ScenarioPlan {
  readonly durationMs: number;
  readonly faults: Fault[];
  readonly extraSlots: number;
  readonly skewPpm: number;
  readonly convergenceFromMs: number | null;
}

export type ScenarioKind =
  | 'noise'
  | 'crash'
  | 'pause'
  | 'stall'
  | 'slow'
  | 'partition'
  | 'flap'
  | 'clock'
  | 'restart'
  | 'warmup';

export interface ScenarioSpec {
  readonly name: string;
  readonly kind: ScenarioKind;
  readonly description: string;
  readonly network: NetProfile;
  build(n: number, rng: Prng, scale: number): ScenarioPlan;
}

/** The stop lengths of F3/F4, ms. */
export const STOP_LENGTHS_MS = [500, 1000, 2000, 3000, 5000, 10_000, 30_000] as const;

const big = (n: number) => n > 32;
const seconds = (s: number) => s * 1000;

function quiet(n: number, scale: number, small: number, large: number): ScenarioPlan {
  return {
    durationMs: seconds((big(n) ? large : small) * scale),
    faults: [],
    extraSlots: 0,
    skewPpm: 0,
    convergenceFromMs: null,
  };
}

/**
 * Crash schedule: a crash every `gap`, each node down for 60 s then restarted with the same name,
 * never two crashes of the same node at once. Small clusters have one node down at a time.
 */
function crashes(n: number, rng: Prng, scale: number, evidence: boolean): ScenarioPlan {
  const count = Math.max(4, Math.round(60 * scale));
  const downMs = 60_000;
  const gap = big(n) ? 10_000 : 70_000;
  const faults: Fault[] = [];
  const busyUntil = new Array<number>(n).fill(0);
  let t = 5000;
  for (let i = 0; i < count; i++) {
    const at = t + rng.next() * 1000;
    let slot = rng.int(0, n);
    while ((busyUntil[slot] as number) > at) slot = (slot + 1) % n;
    busyUntil[slot] = at + downMs + 20_000;
    faults.push({ at, kind: 'crash', slot, evidence, downMs, newAddr: false, measure: true });
    t += gap;
  }
  return {
    durationMs: t + downMs + 5000,
    faults,
    extraSlots: 0,
    skewPpm: 0,
    convergenceFromMs: null,
  };
}

/** Stops of every length in STOP_LENGTHS_MS, in random order, a few at once in large clusters. */
function stops(n: number, rng: Prng, scale: number, role: 'pause' | 'stall'): ScenarioPlan {
  const reps = Math.max(1, Math.round(6 * scale));
  const lengths: number[] = [];
  for (let r = 0; r < reps; r++) lengths.push(...STOP_LENGTHS_MS);
  for (let i = lengths.length - 1; i > 0; i--) {
    const j = rng.int(0, i + 1);
    const a = lengths[i] as number;
    lengths[i] = lengths[j] as number;
    lengths[j] = a;
  }
  const lanes = big(n) ? 4 : 1;
  const laneT = new Array<number>(lanes).fill(5000);
  const busyUntil = new Array<number>(n).fill(0);
  const faults: Fault[] = [];
  lengths.forEach((len, i) => {
    const lane = i % lanes;
    const at = (laneT[lane] as number) + rng.next() * 1000;
    let slot = rng.int(0, n);
    while ((busyUntil[slot] as number) > at) slot = (slot + 1) % n;
    busyUntil[slot] = at + len + 20_000;
    faults.push({ at, kind: 'stop', slot, durationMs: len, role });
    laneT[lane] = at + len + 15_000;
  });
  return {
    durationMs: Math.max(...laneT) + 5000,
    faults,
    extraSlots: 0,
    skewPpm: 0,
    convergenceFromMs: null,
  };
}

export const SCENARIOS: readonly ScenarioSpec[] = [
  {
    name: 'quiet-lan',
    kind: 'noise',
    description: 'N1: lognormal delay (median 0.2 ms, σ 0.5), 0.01 % loss, no faults',
    network: N1_QUIET_LAN,
    build: (n, _rng, scale) => quiet(n, scale, 600, 120),
  },
  {
    name: 'noisy-cloud',
    kind: 'noise',
    description: 'N2: delay median 1 ms / p99 20 ms, 50–200 ms spikes once a minute, 1 % loss',
    network: N2_NOISY_CLOUD,
    build: (n, _rng, scale) => quiet(n, scale, 600, 120),
  },
  {
    name: 'burst-loss',
    kind: 'noise',
    description: 'N3: Gilbert–Elliott loss 0.4 % in bursts of 3, plus two node outages of 10–120 s',
    network: N3_BURST_LOSS,
    build: (n, rng, scale) => {
      const plan = quiet(n, scale, 600, 240);
      const faults: Fault[] = [];
      for (let i = 0; i < 2; i++) {
        const len = seconds(10 + rng.next() * 110) * Math.min(1, scale * 2);
        const at = rng.next() * Math.max(1, plan.durationMs - len);
        faults.push({ at, kind: 'isolate', slot: rng.int(0, n), durationMs: len });
      }
      return { ...plan, faults };
    },
  },
  {
    name: 'heavy-tail',
    kind: 'noise',
    description:
      'N4: Pareto(α 1.5) extra delay, 10 % slow mode +100 ms, 25 % of nodes CPU-throttled',
    network: N4_HEAVY_TAIL,
    build: (n, _rng, scale) => quiet(n, scale, 600, 120),
  },
  {
    name: 'silent-crash',
    kind: 'crash',
    description: 'F1: host loss, no evidence; restart with the same name 60 s later',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => crashes(n, rng, scale, false),
  },
  {
    name: 'crash-with-evidence',
    kind: 'crash',
    description: 'F2: process exit, port closed (ICMP port unreachable / RST on contact)',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => crashes(n, rng, scale, true),
  },
  {
    name: 'target-pause',
    kind: 'pause',
    description: 'F3: stop-the-world pauses of 0.5–30 s at the target (SIGSTOP)',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => stops(n, rng, scale, 'pause'),
  },
  {
    name: 'observer-stall',
    kind: 'stall',
    description: 'F4: event loop blocked 0.5–30 s at an observer; timers fire before I/O after it',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => stops(n, rng, scale, 'stall'),
  },
  {
    name: 'slow-members',
    kind: 'slow',
    description:
      'F5: 10 % of members process every message late: +D × U(0.5, 1.5), FIFO, D = 1000, 500, 100 ms',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => {
      const plan = quiet(n, scale, 900, 240);
      const k = Math.max(1, Math.round(n * 0.1));
      const delays = [1000, 500, 100];
      const slots = new Set<number>();
      while (slots.size < k) slots.add(rng.int(0, n));
      const faults: Fault[] = [...slots].map((slot, i) => ({
        at: 0,
        kind: 'slow' as const,
        slot,
        delayMs: delays[i % delays.length] as number,
      }));
      return { ...plan, faults };
    },
  },
  {
    name: 'asymmetric-partition',
    kind: 'partition',
    description: 'F6: A→B dropped for 60 s (B→A fine); alternately UDP blocked both ways, TCP fine',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => {
      const cuts = Math.max(2, Math.round(6 * scale));
      const lanes = big(n) ? 2 : 1;
      const faults: Fault[] = [];
      const laneT = new Array<number>(lanes).fill(5000);
      for (let i = 0; i < cuts; i++) {
        const lane = i % lanes;
        const at = laneT[lane] as number;
        const a = rng.int(0, n);
        const b = (a + 1 + rng.int(0, n - 1)) % n;
        if (i % 2 === 0) {
          faults.push({ at, kind: 'block', from: a, to: b, channel: 'all', durationMs: 60_000 });
        } else {
          faults.push({ at, kind: 'block', from: a, to: b, channel: 'udp', durationMs: 60_000 });
          faults.push({ at, kind: 'block', from: b, to: a, channel: 'udp', durationMs: 60_000 });
        }
        laneT[lane] = at + 75_000;
      }
      return {
        durationMs: Math.max(...laneT) + 5000,
        faults,
        extraSlots: 0,
        skewPpm: 0,
        convergenceFromMs: null,
      };
    },
  },
  {
    name: 'partial-partition',
    kind: 'partition',
    description:
      'F7: one node reaches only 50 % of peers for 60 s; then a 10 % minority cut off for 30 s',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => {
      const rounds = Math.max(1, Math.round(2 * scale));
      const faults: Fault[] = [];
      let t = 5000;
      for (let r = 0; r < rounds; r++) {
        const slot = rng.int(0, n);
        const cut: number[] = [];
        for (let b = 0; b < n; b++) if (b !== slot && rng.chance(0.5)) cut.push(b);
        faults.push({ at: t, kind: 'reach', slot, cut, durationMs: 60_000 });
        t += 75_000;
        const k = Math.max(1, Math.round(n * 0.1));
        const group = new Set<number>();
        while (group.size < k) group.add(rng.int(0, n));
        faults.push({ at: t, kind: 'partition', group: [...group], durationMs: 30_000 });
        t += 45_000;
      }
      return { durationMs: t + 5000, faults, extraSlots: 0, skewPpm: 0, convergenceFromMs: null };
    },
  },
  {
    name: 'flapping-link',
    kind: 'flap',
    description: "F8: a node's link goes down and up every U(2, 10) s",
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => {
      const plan = quiet(n, scale, 600, 180);
      const flappers = big(n) ? 2 : 1;
      const faults: Fault[] = [];
      for (let f = 0; f < flappers; f++) {
        const slot = (f * Math.floor(n / 2) + rng.int(0, Math.max(1, Math.floor(n / 2)))) % n;
        let t = 2000;
        while (t < plan.durationMs - 12_000) {
          const down = seconds(2 + rng.next() * 8);
          faults.push({ at: t, kind: 'isolate', slot, durationMs: down });
          t += down + seconds(2 + rng.next() * 8);
        }
      }
      return { ...plan, faults };
    },
  },
  {
    name: 'clock-steps',
    kind: 'clock',
    description: 'F9: wall-clock steps of ±1 h and monotonic rate skew of ±200 ppm',
    network: N1_QUIET_LAN,
    build: (n, rng, scale) => {
      const plan = quiet(n, scale, 600, 120);
      const faults: Fault[] = [];
      for (let t = 10_000; t < plan.durationMs; t += 30_000) {
        faults.push({
          at: t,
          kind: 'wallStep',
          slot: rng.int(0, n),
          deltaMs: rng.chance(0.5) ? 3.6e6 : -3.6e6,
        });
      }
      return { ...plan, faults, skewPpm: 200 };
    },
  },
  {
    name: 'mass-restart',
    kind: 'restart',
    description: 'F10: all members restart within 30 s (down 1–5 s), 10 % at a new address',
    network: N1_QUIET_LAN,
    build: (n, rng) => {
      const faults: Fault[] = [];
      let last = 0;
      for (let slot = 0; slot < n; slot++) {
        const at = 10_000 + rng.next() * 30_000;
        const downMs = 1000 + rng.next() * 4000;
        last = Math.max(last, at + downMs);
        faults.push({
          at,
          kind: 'crash',
          slot,
          evidence: true,
          downMs,
          newAddr: rng.chance(0.1),
          measure: false,
        });
      }
      return {
        durationMs: last + 90_000,
        faults,
        extraSlots: 0,
        skewPpm: 0,
        convergenceFromMs: last + 1,
      };
    },
  },
  {
    name: 'warm-up',
    kind: 'warmup',
    description: 'F12: members join under N2 noise; half crash silently within their first 10 s',
    network: N2_NOISY_CLOUD,
    build: (n, rng, scale) => {
      const joiners = Math.max(4, Math.round((big(n) ? 24 : 48) * scale));
      const faults: Fault[] = [];
      let t = 5000;
      for (let j = 0; j < joiners; j++) {
        const slot = n + j;
        faults.push({ at: t, kind: 'join', slot });
        // Even joiners crash during their first 10 heartbeats (measured); odd ones live 40 s, so
        // false suspicions of a member that is still warming up show in the mistake rate.
        const early = j % 2 === 0;
        const life = early ? seconds(1 + rng.next() * 9) : seconds(40);
        faults.push({
          at: t + life,
          kind: 'crash',
          slot,
          evidence: false,
          downMs: Infinity,
          newAddr: false,
          measure: early,
        });
        t += 20_000;
      }
      return {
        durationMs: t + 60_000,
        faults,
        extraSlots: joiners,
        skewPpm: 0,
        convergenceFromMs: null,
      };
    },
  },
];

export function scenarioByName(name: string): ScenarioSpec | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
