// The probe cycle: one probe per protocol period in shuffled round-robin order (SWIM §4.3), the
// ring watch's alarms, which probe a silent watched member at once, and how each probe ends: an
// ack, direct or through a relay, lowers the local health multiplier; silence raises it and
// accuses the target (Lifeguard §IV.A; accusation.ts).

import { suspect } from './accusation.js';
import { SWIM_LIMITS } from './config.js';
import type { Channel, Sender } from './messages.js';
import { live, type Member, type Probe, type SwimNode } from './node.js';
import { goIndirect, sendProbe } from './ping.js';
import { alarmable, alarmDueMs, releaseWatch } from './ring-watch.js';

export function stepProbe(node: SwimNode): void {
  const p = node.probe;
  if (p !== null) advanceProbe(node, p);
  if (node.probe === null && node.now >= node.nextProbeMs) startProbe(node);
}

function startProbe(node: SwimNode): void {
  const c = node.config;
  const interval = c.probeIntervalMs * (node.awareness.health + 1);
  node.nextProbeMs = node.now + interval;
  const target = node.order.next((n) => {
    const m = node.members.get(n);
    return m !== undefined && live(m);
  });
  if (target === undefined) return;
  const m = node.members.get(target) as Member;
  node.probe = sendProbe(node, 'probe', m);
}

function advanceProbe(node: SwimNode, p: Probe): void {
  if (!p.indirect && node.now >= p.directDeadlineMs) goIndirect(node, p);
  if (p.indirect && node.now >= p.deadlineMs) finishProbe(node, p, 'none');
}

/** A probe ends: acked directly over UDP or TCP, through a relay, or not at all. */
function finishProbe(node: SwimNode, p: Probe, outcome: Channel | 'indirect' | 'none'): void {
  node.awaiting.delete(p.seq);
  if (p.kind === 'probe') {
    if (node.probe === p) node.probe = null;
  } else if (node.alarms.get(p.target) === p) {
    node.alarms.delete(p.target);
  }
  const m = node.members.get(p.target);
  if (outcome !== 'none') {
    node.awareness.apply(-1);
    if (m !== undefined) noteLink(node, m, outcome);
    if (p.kind === 'alarm') {
      const w = node.watched.get(p.target);
      if (outcome === 'udp') w?.detector.touch(node.now);
      else if (m !== undefined && node.config.linkUnreachable) releaseWatch(node, m);
    }
    return;
  }
  // Lifeguard §IV.A: a failed probe, and each probe with missing nacks, raise the multiplier.
  // tenure: when every relay nacked, the relays have shown that we hear them and the target is
  // silent to them too; the failure says nothing about our own health, so it costs nothing.
  const allNacked = p.expectedNacks > 0 && p.nacks.size >= p.expectedNacks;
  let delta = 1;
  if (p.expectedNacks > p.nacks.size) delta += 1;
  if (node.config.suspicion === 'tenure' && allNacked) delta = 0;
  if (m === undefined || !live(m)) {
    node.awareness.apply(delta);
    return;
  }
  let silentSince = p.sentMs;
  const w = node.watched.get(m.name);
  const hb = node.config.watch?.heartbeatIntervalMs;
  if (w !== undefined && hb !== undefined && w.detector.lastHeartbeatMs !== undefined) {
    silentSince = Math.min(silentSince, w.detector.lastHeartbeatMs + hb);
  }
  // Corroborated: every relay answered, and each said the target did not answer it either. A
  // node cut off from the others gets silence from its relays instead, and must not convict.
  const corroborated = p.relays === 0 ? node.liveCount < 2 : allNacked && p.nacks.size >= p.relays;
  suspect(node, m, silentSince, p.nacks, corroborated);
  node.awareness.apply(delta);
}

/** Link-level reachability (tenure): answered only through relays means the link is cut. */
function noteLink(node: SwimNode, m: Member, outcome: Channel | 'indirect'): void {
  if (!node.config.linkUnreachable) return;
  const down = outcome !== 'udp';
  if (down !== m.linkDown) {
    m.linkDown = down;
    node.events.push({
      type: down ? 'unreachable' : 'reachable',
      name: m.name,
      atMs: node.now,
      channel: outcome === 'tcp' ? 'udp' : 'all',
    });
  }
}

export function onAck(
  node: SwimNode,
  seq: number,
  from: Sender,
  channel: Channel,
  watcher: string | null,
): void {
  const relay = node.relays.get(seq);
  if (relay !== undefined) {
    node.relays.delete(seq);
    node.push(relay.requester, { type: 'ack', seq: relay.requesterSeq, watcher, ...node.base() });
    return;
  }
  const a = node.awaiting.get(seq);
  if (a === undefined) return;
  if (a.kind === 'buddy' || a.kind === 'evidence') {
    node.awaiting.delete(seq);
    const m = node.members.get(a.target);
    if (m !== undefined) m.evidenceAtMs = -Infinity;
    return;
  }
  const p = a.probe;
  const direct = from.name === p.target;
  finishProbe(node, p, direct ? channel : 'indirect');
  if (p.kind === 'alarm' && direct && watcher !== node.name) node.watched.delete(p.target);
}

export function onNack(node: SwimNode, seq: number, from: Sender): void {
  const a = node.awaiting.get(seq);
  if (a !== undefined && (a.kind === 'probe' || a.kind === 'alarm')) a.probe.nacks.add(from.name);
}

export function stepAlarms(node: SwimNode): void {
  const wc = node.config.watch;
  if (wc === null) return;
  for (const a of [...node.alarms.values()]) {
    if (!a.indirect && node.now >= a.directDeadlineMs) goIndirect(node, a);
    if (a.indirect && node.now >= a.deadlineMs) finishProbe(node, a, 'none');
  }
  for (const [name, w] of node.watched) {
    const m = node.members.get(name);
    if (m === undefined || !live(m) || m.epoch !== w.epoch) {
      node.watched.delete(name);
      continue;
    }
    if (!alarmable(node, name) || node.now < alarmDueMs(node, w)) continue;
    if (node.alarms.size >= SWIM_LIMITS.watchedMax) break;
    w.nextAlarmMs = node.now + 2 * wc.heartbeatIntervalMs;
    node.alarms.set(name, sendProbe(node, 'alarm', m));
  }
}
