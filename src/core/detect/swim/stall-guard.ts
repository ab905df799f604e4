// Time and the stall guard: every input enters with its time, and an input far past this
// member's own deadline means it was stalled (event loop blocked, process paused), so the
// timeouts that expired meanwhile say nothing about its peers. Also the next deadline,
// recomputed after every input.

import { assert } from '../../base/index.js';
import { SWIM_LIMITS } from './config.js';
import type { SwimNode } from './node.js';
import { alarmable, alarmDueMs } from './ring-watch.js';

/** Called at the start of every input. Returns whether we were just stalled. */
export function enter(node: SwimNode, nowMs: number): boolean {
  assert(nowMs >= node.now, () => `swim ${node.name}: time went back ${node.now} → ${nowMs}`);
  node.now = nowMs;
  const late = nowMs - node.dueMs;
  const threshold = node.config.stallThresholdMs;
  if (threshold > 0 && Number.isFinite(node.dueMs) && late > threshold) {
    onStall(node, late);
    node.dueMs = nowMs;
    node.awaitIo = true;
    return true;
  }
  return false;
}

/**
 * We did not run for `durationMs` (event loop blocked, process paused). Timeouts that expired
 * meanwhile say nothing about the peers: we could not hear them. So: drop the probes in flight
 * without a verdict, push every suspicion and watch clock back by the stall, raise our local
 * health multiplier, and keep this tick quiet so one round of I/O runs before any verdict
 * (after a long block Node runs expired timers before it polls for I/O; Cassandra's local-pause
 * guard in gms/FailureDetector.java, generalised).
 */
function onStall(node: SwimNode, durationMs: number): void {
  node.events.push({ type: 'stall', durationMs, atMs: node.now });
  node.awareness.apply(1);
  for (const [seq, a] of node.awaiting) {
    if (a.kind === 'probe' || a.kind === 'alarm') node.awaiting.delete(seq);
  }
  node.probe = null;
  node.alarms.clear();
  node.relays.clear();
  node.nextProbeMs = Math.max(node.nextProbeMs, node.now);
  for (const w of node.watched.values()) {
    w.detector.shift(durationMs);
    w.nextAlarmMs = Math.max(w.nextAlarmMs, node.now);
  }
  for (const name of node.suspects) node.members.get(name)?.suspicion?.postpone(durationMs);
}

/** Finish an input: recompute the next deadline. */
export function finishInput(node: SwimNode): void {
  assert(node.outbox.length <= SWIM_LIMITS.outboxMax, 'swim: outbox overflow');
  assert(node.awaiting.size <= SWIM_LIMITS.awaitingMax + 8, 'swim: awaiting overflow');
  node.dueMs = computeDeadline(node);
}

function computeDeadline(node: SwimNode): number {
  if (node.awaitIo) return node.now;
  let d = Infinity;
  const gossipDue = node.queue.size > 0 ? node.nextGossipMs : Infinity;
  d = Math.min(d, gossipDue);
  if (node.leftAtMs !== null) return d;
  if (node.liveCount > 0) {
    d = Math.min(d, node.nextProbeMs, node.nextPushPullMs);
    if (node.watcher !== null) d = Math.min(d, node.nextHeartbeatMs);
  }
  const p = node.probe;
  if (p !== null) d = Math.min(d, p.indirect ? p.deadlineMs : p.directDeadlineMs);
  for (const a of node.alarms.values())
    d = Math.min(d, a.indirect ? a.deadlineMs : a.directDeadlineMs);
  for (const r of node.relays.values()) d = Math.min(d, r.nacked ? r.expireAtMs : r.nackAtMs);
  for (const name of node.suspects) {
    const m = node.members.get(name);
    if (m?.suspicion) {
      d = Math.min(d, m.suspicion.deadlineMs());
      if (m.ownSuspicion && node.config.suspicion === 'tenure') d = Math.min(d, m.nextBuddyMs);
    }
  }
  for (const [name, w] of node.watched)
    if (alarmable(node, name)) d = Math.min(d, alarmDueMs(node, w));
  for (const name of node.suppressed) {
    d = Math.min(d, node.members.get(name)?.damper?.releaseAtMs() ?? Infinity);
  }
  return Math.max(d, node.now);
}
