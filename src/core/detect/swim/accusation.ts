// Suspicion and death: this member's own accusations from failed probes, the suspicion timers
// (SWIM §4.2's suspect state; Lifeguard §IV.B's timeouts that shrink with independent
// confirmations), tenure's P* bound and corroboration before `dead`, and the buddy pings that
// tell an accused member to refute (Lifeguard's buddy system, Dadgar et al. 2018, §IV).

import { SWIM_LIMITS } from './config.js';
import { kickGossip } from './gossip.js';
import { accusation, clearSuspicion, setStatus } from './member-table.js';
import { FRESHNESS_MARGIN_MS, type Member, type SwimNode } from './node.js';
import { verify } from './ping.js';
import { expectedConfirmations, Suspicion, suspicionMinMs } from './suspicion.js';

/** This node's own accusation, from a failed probe or alarm. */
export function suspect(
  node: SwimNode,
  m: Member,
  silentSinceMs: number,
  nacks: ReadonlySet<string>,
  corroborated: boolean,
): void {
  // tenure counts relays that nacked as independent confirmations: each is a live member that
  // tried the target and failed. memberlist uses nacks only for its local health.
  const tenure = node.config.suspicion === 'tenure';
  const confirmers = tenure ? nacks : new Set<string>();
  const old = m.status === 'suspect' ? m.suspicion : null;
  const s = newSuspicion(node, node.name, silentSinceMs, true);
  s.corroborated = corroborated;
  for (const n of confirmers) s.confirm(n);
  if (old !== null) {
    // Already suspected. SWIM counts us as one more accuser. tenure takes its own evidence over a
    // rumor's when its bound is tighter, and announces once its own probe is corroborated.
    if (!tenure || m.ownSuspicion) {
      for (const n of confirmers) old.confirm(n);
      old.confirm(node.name);
      if (tenure && corroborated && !old.corroborated) {
        old.corroborated = true;
        announce(node, m, old);
      }
      return;
    }
    for (const a of old.accusers()) s.confirm(a);
    m.ownSuspicion = true;
    m.nextBuddyMs = node.now;
    if (s.deadlineMs() < old.deadlineMs()) {
      m.suspicion = s;
    } else {
      for (const n of confirmers) old.confirm(n);
      if (corroborated) old.corroborated = true;
    }
    if (corroborated) announce(node, m, m.suspicion ?? s);
    return;
  }
  startSuspicion(node, m, s, true);
  // tenure keeps an uncorroborated suspicion to itself (it pings the target, which refutes if it
  // hears): a cut-off or slow observer then cannot start a gossip storm of false accusations.
  // It asks other relays once at once, so a lost nack does not delay the verdict.
  if (!tenure || corroborated) announce(node, m, s);
  else verify(node, m);
}

export function announce(node: SwimNode, m: Member, s: Suspicion): void {
  node.queue.enqueue(accusation(node, 'suspect', m, s.silentSinceMs, 'timeout'), node.now);
  kickGossip(node);
}

export function newSuspicion(
  node: SwimNode,
  accuser: string,
  silentSinceMs: number,
  own: boolean,
): Suspicion {
  const c = node.config;
  const n = node.liveCount + 1;
  if (c.suspicion === 'fixed') {
    const t = suspicionMinMs(c.suspicionMult, n, c.probeIntervalMs);
    return new Suspicion(node.now, t, t, 0, accuser, silentSinceMs);
  }
  if (c.suspicion === 'lifeguard') {
    const min = suspicionMinMs(c.suspicionMult, n, c.probeIntervalMs);
    const k = expectedConfirmations(c.suspicionMult, n);
    return new Suspicion(node.now, min, min * c.suspicionMaxMult, k, accuser, silentSinceMs);
  }
  // tenure: never before P* + slack after the target could first have stopped; the accuser
  // decides, those who only heard the rumor wait a little longer as a backup.
  const bound = silentSinceMs + c.pauseToleranceMs + c.deadSlackMs - node.now;
  let min = Math.max(c.minSuspectMs, bound);
  if (!own) min += c.rumorBackupMs;
  // An announced accusation was already corroborated by its author's relays, so a rumor starts
  // at the minimum; our own suspicion waits for confirmations as Lifeguard's does.
  const k = own ? expectedConfirmations(c.suspicionMult, n) : 0;
  return new Suspicion(node.now, min, min * c.suspicionMaxMult, k, accuser, silentSinceMs);
}

export function startSuspicion(node: SwimNode, m: Member, s: Suspicion, own: boolean): void {
  m.suspicion = s;
  m.ownSuspicion = own;
  m.nextBuddyMs = node.now;
  node.suspects.add(m.name);
  setStatus(node, m, 'suspect', own ? node.name : s.firstAccuser, 'timeout');
}

export function stepSuspicions(node: SwimNode): void {
  for (const name of [...node.suspects]) {
    const m = node.members.get(name);
    const s = m?.suspicion;
    if (m === undefined || s === null || s === undefined || m.status !== 'suspect') {
      node.suspects.delete(name);
      continue;
    }
    if (node.now < s.deadlineMs()) continue;
    const c = node.config;
    if (c.suspicion === 'tenure' && m.lastHeardMs > s.silentSinceMs + FRESHNESS_MARGIN_MS) {
      // Veto: the target spoke to us after the silence began, so it was not stopped then. If it
      // stopped since, it stopped after that contact: start over from now, with a probe of our
      // own (the buddy ping reminds it to refute, the probe bounds the stop) and a full P*.
      const fresh = newSuspicion(node, node.name, node.now, true);
      m.suspicion = fresh;
      m.ownSuspicion = true;
      m.nextBuddyMs = node.now;
      verify(node, m);
      continue;
    }
    if (c.suspicion === 'tenure' && !s.corroborated) {
      // No verdict on our own word alone: probe once more, through relays, and convict only if
      // they all answer that the target is silent to them too. A cut-off observer never gets
      // there.
      verify(node, m);
      s.postpone(c.probeDeadlineMs * (node.awareness.health + 1));
      continue;
    }
    declareDead(node, m, 'timeout', s.silentSinceMs);
  }
}

/** tenure's buddy pings: while we accuse a member, ping it with the accusation every period. */
export function stepBuddies(node: SwimNode): void {
  if (node.config.suspicion !== 'tenure') return;
  for (const name of node.suspects) {
    const m = node.members.get(name);
    if (m === undefined || !m.ownSuspicion || node.now < m.nextBuddyMs) continue;
    m.nextBuddyMs = node.now + node.config.probeIntervalMs;
    const seq = node.nextSeq();
    if (node.awaiting.size < SWIM_LIMITS.awaitingMax)
      node.awaiting.set(seq, { kind: 'buddy', target: name });
    node.push(m.addr, { type: 'ping', seq, target: name, ...node.base(name) }, 'udp');
  }
}

export function declareDead(
  node: SwimNode,
  m: Member,
  reason: 'timeout' | 'evidence',
  silentSinceMs: number,
): void {
  clearSuspicion(node, m);
  setStatus(node, m, 'dead', node.name, reason);
  node.queue.enqueue(accusation(node, 'dead', m, silentSinceMs, reason), node.now);
  kickGossip(node);
}
