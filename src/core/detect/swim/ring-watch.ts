// The ring watch (tenure's addition): each member heartbeats one way to the next member on a
// hash ring, which judges the heartbeats by φ accrual (Hayashibara et al. 2004) and, when φ
// crosses the alarm level, probes the member at once (probe.ts). Choosing, handing off and
// releasing the watcher live here.

import { type PhiAccrualConfig, PhiAccrualDetector } from '../phi-accrual.js';
import { phiNormalTail } from '../phi-formula.js';
import { SWIM_LIMITS, type SwimConfig } from './config.js';
import { ringKeyOf } from './member-table.js';
import type { Sender } from './messages.js';
import type { Member, SwimNode, Watched } from './node.js';

const AVOID_WATCHER_MS = 60_000;

export function heartbeat(node: SwimNode): void {
  const w = node.config.watch;
  if (w === null) return;
  if (node.ringDirty) recomputeWatcher(node);
  if (node.watcher === null || node.now < node.nextHeartbeatMs) return;
  const m = node.members.get(node.watcher);
  if (m !== undefined)
    node.push(m.addr, { type: 'heartbeat', handoff: false, ...node.base() }, 'udp', true);
  node.nextHeartbeatMs += w.heartbeatIntervalMs;
  if (node.nextHeartbeatMs <= node.now) node.nextHeartbeatMs = node.now + w.heartbeatIntervalMs;
}

function recomputeWatcher(node: SwimNode): void {
  node.ringDirty = false;
  for (const [name, until] of node.avoidWatchers)
    if (until <= node.now) node.avoidWatchers.delete(name);
  const mine = ringKeyOf(node.name);
  let best: Member | null = null;
  let first: Member | null = null;
  for (const m of node.members.values()) {
    if (m.status !== 'alive' || node.avoidWatchers.has(m.name)) continue;
    if (first === null || ringLess(m, first)) first = m;
    if (ringAfter(m, mine, node.name) && (best === null || ringLess(m, best))) best = m;
  }
  const next = (best ?? first)?.name ?? null;
  if (next !== node.watcher) {
    const old = node.watcher === null ? undefined : node.members.get(node.watcher);
    if (old !== undefined && old.status === 'alive') {
      node.push(old.addr, { type: 'heartbeat', handoff: true, ...node.base() }, 'udp');
    }
    node.watcher = next;
    if (node.config.watch !== null && old === undefined) {
      node.nextHeartbeatMs = Math.min(node.nextHeartbeatMs, node.now);
    }
  }
}

export function onHeartbeat(node: SwimNode, from: Sender, handoff: boolean): void {
  const wc = node.config.watch;
  if (wc === null) return;
  if (handoff) {
    node.watched.delete(from.name);
    return;
  }
  let w = node.watched.get(from.name);
  if (w === undefined) {
    if (node.watched.size >= SWIM_LIMITS.watchedMax) return;
    w = {
      detector: new PhiAccrualDetector(watchPhiConfig(wc)),
      epoch: from.epoch,
      nextAlarmMs: 0,
    };
    node.watched.set(from.name, w);
  }
  if (w.epoch !== from.epoch) {
    w.detector.reset();
    w.epoch = from.epoch;
  }
  w.detector.heartbeat(node.now);
}

export function alarmDueMs(node: SwimNode, w: Watched): number {
  const wc = node.config.watch;
  if (wc === null || w.detector.lastHeartbeatMs === undefined) return Infinity;
  // φ is monotone in the silence: solve for the time it crosses the alarm level.
  const crossing = w.detector.lastHeartbeatMs + alarmSilenceMs(node, w);
  return Math.max(crossing, w.nextAlarmMs);
}

function alarmSilenceMs(node: SwimNode, w: Watched): number {
  const wc = node.config.watch as NonNullable<SwimConfig['watch']>;
  // Invert the normal φ: silence = mean + pause + y·σ with −log10 Q(y) = alarmPhi.
  const sd = Math.max(w.detector.stdDevMs, wc.minStdDevMs);
  return w.detector.meanMs + wc.alarmPauseMs + normalQuantileForPhi(wc.alarmPhi) * sd;
}

/** No alarm while one is in flight or while we already accuse the member ourselves. */
export function alarmable(node: SwimNode, name: string): boolean {
  const m = node.members.get(name);
  return m !== undefined && !node.alarms.has(name) && !(m.status === 'suspect' && m.ownSuspicion);
}

/** We cannot hear `m` directly: tell it to heartbeat elsewhere, and stop watching it. */
export function releaseWatch(node: SwimNode, m: Member): void {
  node.watched.delete(m.name);
  node.push(m.addr, { type: 'release', ...node.base() }, 'udp');
  node.push(m.addr, { type: 'release', ...node.base() }, 'tcp');
}

/** A watcher asked us to heartbeat elsewhere: it cannot hear us directly. */
export function onRelease(node: SwimNode, from: Sender): void {
  node.avoidWatchers.set(from.name, node.now + AVOID_WATCHER_MS);
  node.ringDirty = true;
}

function ringLess(a: Member, b: Member): boolean {
  return a.ringKey < b.ringKey || (a.ringKey === b.ringKey && a.name < b.name);
}

function ringAfter(m: Member, key: number, name: string): boolean {
  return m.ringKey > key || (m.ringKey === key && m.name > name);
}

/** The watch φ detector: exact normal tail, the alarm pause folded into the threshold search. */
export function watchPhiConfig(w: NonNullable<SwimConfig['watch']>): PhiAccrualConfig {
  return {
    model: 'normal',
    threshold: w.alarmPhi,
    windowSize: w.windowSize,
    minStdDevMs: w.minStdDevMs,
    acceptablePauseMs: w.alarmPauseMs,
    bootstrapIntervalsMs: [w.heartbeatIntervalMs * 0.9, w.heartbeatIntervalMs * 1.1],
    maxRecordedIntervalMs: 2 * w.heartbeatIntervalMs,
    skipIntervalWhenUnavailable: true,
  };
}

const quantileCache = new Map<number, number>();

/** The y at which −log10 Q(y) = phi, for the normal tail (cached; phi is a config constant). */
export function normalQuantileForPhi(phi: number): number {
  const hit = quantileCache.get(phi);
  if (hit !== undefined) return hit;
  let lo = -10;
  let hi = 40;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (phiNormalTail(mid) >= phi) hi = mid;
    else lo = mid;
  }
  quantileCache.set(phi, hi);
  return hi;
}
