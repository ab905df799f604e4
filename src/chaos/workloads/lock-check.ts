// The locks workload's verdict on what it recorded: the lock exclusion checker
// (src/check/lock-exclusion.ts) on the holds, their leases' renewals and, as each hold's effects,
// the times the run's fence accepted a write of it; and the fence's own log, whose accepted tokens
// must never go down per lock. What the checker calls an uncertain effect (a write accepted after
// every promise of its lease) is no anomaly here: the holders are meant to be stale now and then
// (the workload pauses them between their check and their write, Kleppmann's scenario), and what
// must hold then is that the fence refuses them once a newer holder wrote. They are counted.
//
// Clock skew: a violation that rests on lease promises is judged with the drift ratio the
// nemesis's clock windows allow for its holds' time (clock-windows.ts). The checker runs once per
// distinct ratio and each violation is kept from the run whose ratio is that of its holds: a larger
// ratio only shortens promises, and the checks that rest on no clock find the same in every run.
import {
  checkLockExclusion,
  type LockHold,
  type LockViolation,
  type LockViolationKind,
} from '../../check/lock-exclusion.js';
import { leasePromisedUntilMs, type LeaseRenewal } from '../../check/lease-contract.js';
import type { Anomaly } from '../anomaly.js';
import type { FenceWrite } from './lock-fence.js';

/** A hold as the workload recorded it; `hold` ties it to its fence writes. */
export interface RecordedHold extends Omit<LockHold, 'effects'> {
  readonly hold: number;
}

/** A SIGSTOP the workload gave a holder's client. */
export interface ClientPause {
  readonly client: number;
  readonly fromMs: number;
  readonly toMs: number;
  /** Longer than the client's lease TTL. */
  readonly beyondTtl: boolean;
}

export interface LockRecord {
  readonly holds: readonly RecordedHold[];
  readonly renewals: readonly LeaseRenewal[];
  readonly fence: readonly FenceWrite[];
  readonly pauses: readonly ClientPause[];
}

export interface LockVerdict {
  readonly anomalies: Anomaly[];
  /** Writes accepted after every promise of their lease: stale holders the fence let through. */
  readonly uncertainEffects: number;
}

export interface LockCheckContext {
  /** The drift ratio allowed over [fromMs, toMs] (ClockWindows.driftRatioDuring). */
  readonly driftRatioDuring: (fromMs: number, toMs: number) => number;
  /** A time as the report prints it (Timeline.at). */
  readonly at: (ms: number) => string;
  /** The end of the run, for holds never released. */
  readonly endMs: number;
  /**
   * The run's start: the checker's messages quote times as ms since then (the report's `at`
   * prints seconds since then). Default 0.
   */
  readonly originMs?: number;
}

const workload = 'locks';
/** Fence log lines quoted per anomaly, and how far before it they are looked for. */
const excerptWritesMax = 12;
const excerptBeforeMs = 5_000;

export function judgeLocks(record: LockRecord, context: LockCheckContext): LockVerdict {
  const o = context.originMs ?? 0;
  const r = shifted(record, -o);
  const ctx: LockCheckContext = {
    driftRatioDuring: (fromMs, toMs) => context.driftRatioDuring(fromMs + o, toMs + o),
    at: (ms) => context.at(ms + o),
    endMs: context.endMs - o,
  };
  const v = judgeShifted(r, ctx);
  return { ...v, anomalies: v.anomalies.map((a) => ({ ...a, atMs: a.atMs + o })) };
}

/** Every time in `r` moved by `byMs`. */
function shifted(r: LockRecord, byMs: number): LockRecord {
  return {
    holds: r.holds.map((h) => ({
      ...h,
      requestedMs: h.requestedMs + byMs,
      acquiredMs: h.acquiredMs + byMs,
      releasedMs: h.releasedMs + byMs,
    })),
    renewals: r.renewals.map((x) => ({
      ...x,
      sentMs: x.sentMs + byMs,
      answeredMs: x.answeredMs + byMs,
    })),
    fence: r.fence.map((w) => ({ ...w, atMs: w.atMs + byMs })),
    pauses: r.pauses.map((p) => ({ ...p, fromMs: p.fromMs + byMs, toMs: p.toMs + byMs })),
  };
}

function judgeShifted(r: LockRecord, ctx: LockCheckContext): LockVerdict {
  const effects = new Map<number, number[]>();
  for (const w of r.fence) {
    if (!w.accepted) continue;
    const list = effects.get(w.hold);
    if (list === undefined) effects.set(w.hold, [w.atMs]);
    else list.push(w.atMs);
  }
  const holds: LockHold[] = r.holds.map((h) => ({
    lock: h.lock,
    client: h.client,
    lease: h.lease,
    token: h.token,
    requestedMs: h.requestedMs,
    acquiredMs: h.acquiredMs,
    releasedMs: h.releasedMs,
    effects: (effects.get(h.hold) ?? []).sort((a, b) => a - b),
  }));
  const driftOf = (h: LockHold): number =>
    ctx.driftRatioDuring(h.requestedMs, Number.isFinite(h.releasedMs) ? h.releasedMs : ctx.endMs);
  const ratios = [...new Set(holds.map(driftOf))];
  const violations: LockViolation[] = [];
  for (const d of ratios.length === 0 ? [] : ratios) {
    const res = checkLockExclusion(holds, r.renewals, { driftRatio: d });
    for (const v of res.violations)
      if (Math.max(driftOf(v.first), driftOf(v.second)) === d) violations.push(v);
  }
  const anomalies: Anomaly[] = [];
  let uncertainEffects = 0;
  for (const v of violations) {
    if (v.kind === 'uncertain-effect') {
      uncertainEffects += lateEffects(v, r.renewals);
      continue;
    }
    anomalies.push(toAnomaly(v, r, ctx));
  }
  anomalies.push(...fenceOrder(r, ctx));
  return { anomalies, uncertainEffects };
}

/** How many of a hold's effects no renewal answered by then promised (the checker's rule). */
function lateEffects(v: LockViolation, renewals: readonly LeaseRenewal[]): number {
  const mine = renewals.filter((x) => x.lease === v.first.lease);
  return v.first.effects.filter(
    (t) => !mine.some((x) => x.answeredMs <= t && t < leasePromisedUntilMs(x)),
  ).length;
}

/** When a violation became visible. */
function atMsOf(v: LockViolation): number {
  const kinds: Record<Exclude<LockViolationKind, 'uncertain-effect'>, () => number> = {
    'duplicate-token': () => Math.max(v.first.acquiredMs, v.second.acquiredMs),
    'token-order': () => v.second.acquiredMs,
    'lease-overlap': () => v.second.acquiredMs,
    'stale-effect': () => {
      const first = Math.min(...v.second.effects);
      return v.first.effects.find((t) => t > first) ?? first;
    },
  };
  return v.kind === 'uncertain-effect' ? v.first.acquiredMs : kinds[v.kind]();
}

function toAnomaly(v: LockViolation, r: LockRecord, ctx: LockCheckContext): Anomaly {
  const atMs = atMsOf(v);
  return {
    workload,
    kind: v.kind,
    message: v.message,
    atMs,
    excerpt: excerpt(r, ctx, v.lock, [v.first, v.second], atMs),
  };
}

/** The two holds, the lock's fence log before the anomaly, and the client pauses then. */
function excerpt(
  r: LockRecord,
  ctx: LockCheckContext,
  lock: string,
  holds: readonly Omit<LockHold, 'effects'>[],
  atMs: number,
): string[] {
  const fromMs = Math.min(atMs, ...holds.map((h) => h.requestedMs)) - excerptBeforeMs;
  const t = ctx.at;
  const lines = [...new Set(holds)].map(
    (h) =>
      `hold: client ${h.client} token ${h.token} lease ${h.lease}: requested ${t(h.requestedMs)}` +
      `, acquired ${t(h.acquiredMs)}, released ` +
      `${Number.isFinite(h.releasedMs) ? t(h.releasedMs) : 'never'}`,
  );
  for (const p of r.pauses)
    if (p.toMs >= fromMs && p.fromMs <= atMs)
      lines.push(`client ${p.client} paused (SIGSTOP) ${t(p.fromMs)} to ${t(p.toMs)}`);
  const writes = r.fence.filter((w) => w.lock === lock && w.atMs >= fromMs && w.atMs <= atMs);
  for (const w of writes.slice(-excerptWritesMax))
    lines.push(
      `fence ${t(w.atMs)}: client ${w.client} token ${w.token} ` +
        `${w.accepted ? 'accepted' : 'rejected'}`,
    );
  return lines;
}

/** Per lock, in the order the fence judged them: an accepted token below one accepted before. */
function fenceOrder(r: LockRecord, ctx: LockCheckContext): Anomaly[] {
  const out: Anomaly[] = [];
  const highest = new Map<string, FenceWrite>();
  /** One anomaly per stale hold: `${lock} ${hold}`. */
  const reported = new Set<string>();
  for (const w of r.fence) {
    if (!w.accepted) continue;
    const h = highest.get(w.lock);
    if (h !== undefined && w.token < h.token) {
      if (reported.has(`${w.lock} ${w.hold}`)) continue;
      reported.add(`${w.lock} ${w.hold}`);
      out.push({
        workload,
        kind: 'fence-accepted-stale',
        message:
          `lock ${w.lock}: the fence accepted token ${w.token} of client ${w.client} at ` +
          `${ctx.at(w.atMs)}, after it had accepted token ${h.token} of client ${h.client} at ` +
          `${ctx.at(h.atMs)}`,
        atMs: w.atMs,
        excerpt: excerpt(r, ctx, w.lock, holdsOf(r, [h.hold, w.hold]), w.atMs),
      });
      continue;
    }
    if (h === undefined || w.token > h.token) highest.set(w.lock, w);
  }
  return out;
}

function holdsOf(r: LockRecord, ids: readonly number[]): RecordedHold[] {
  return r.holds.filter((h) => ids.includes(h.hold));
}
