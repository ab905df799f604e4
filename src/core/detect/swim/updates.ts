// Updates from piggybacked gossip and push/pull, by the precedence rules of SWIM §4.2 (a higher
// incarnation overrides; at the same one suspect overrides alive and dead overrides both), with
// epochs so that a restart with the same name is a new life; refutation of accusations about
// ourselves; and tenure's check of a `dead` rumor against our own fresher contact.

import { newSuspicion, startSuspicion } from './accusation.js';
import { SWIM_LIMITS } from './config.js';
import { kickGossip } from './gossip.js';
import { addMember, clearSuspicion, emitStatus, setStatus } from './member-table.js';
import type { Sender, Update } from './messages.js';
import { FRESHNESS_MARGIN_MS, type Member, type SwimNode } from './node.js';

const REASSERT_INTERVAL_MS = 1000;

/** Every packet proves its sender alive at its epoch and incarnation. */
export function hear(node: SwimNode, s: Sender): void {
  if (s.name === node.name) return;
  const m = node.members.get(s.name);
  if (m === undefined || s.epoch > m.epoch || (s.epoch === m.epoch && s.inc > m.inc)) {
    apply(
      node,
      { type: 'alive', name: s.name, addr: s.addr, epoch: s.epoch, inc: s.inc },
      s.name,
      false,
    );
  }
  const now = node.members.get(s.name);
  if (now === undefined || now.epoch !== s.epoch) return;
  now.lastHeardMs = node.now;
  if (node.config.reassertDead && now.status === 'dead') {
    if (node.now >= now.reassertAtMs) {
      // It does not know we hold it dead; tell it so it refutes (the fix memberlist#311 lacks).
      now.reassertAtMs = node.now + REASSERT_INTERVAL_MS;
      const u: Update = {
        type: 'dead',
        name: now.name,
        epoch: now.epoch,
        inc: now.inc,
        from: node.name,
        silentForMs: 0,
        reason: 'timeout',
      };
      node.push(now.addr, { type: 'gossip', from: node.sender(), updates: [u] });
    }
  }
}

/** Apply one update. `fromPushPull`: memberlist trusts a remote `dead` only as a suspicion. */
export function apply(node: SwimNode, u: Update, via: string, fromPushPull: boolean): void {
  if (u.name === node.name) {
    applyAboutSelf(node, u);
    return;
  }
  const m = node.members.get(u.name);
  switch (u.type) {
    case 'alive':
      applyAlive(node, m, u);
      return;
    case 'suspect':
    case 'dead':
      if (m === undefined || u.epoch !== m.epoch || u.inc < m.inc) return;
      if (u.type === 'dead' && !fromPushPull) applyDead(node, m, u);
      else applySuspect(node, m, u);
      return;
    case 'left':
      if (m === undefined || u.epoch !== m.epoch || u.inc < m.inc || m.status === 'left') return;
      clearSuspicion(node, m);
      m.inc = u.inc;
      setStatus(node, m, 'left', via, undefined);
      node.queue.enqueue(u, node.now);
      kickGossip(node);
      return;
  }
}

function applyAboutSelf(node: SwimNode, u: Update): void {
  if (u.type === 'alive' || u.epoch !== node.epoch || u.inc < node.inc) return;
  if (node.leftAtMs !== null) return;
  // Refute (SWIM §4.2): a higher incarnation overrides the accusation everywhere.
  node.inc = u.inc + 1;
  node.awareness.apply(1);
  node.queue.enqueue(node.selfAlive(), node.now);
  kickGossip(node);
}

function applyAlive(
  node: SwimNode,
  m: Member | undefined,
  u: Extract<Update, { type: 'alive' }>,
): void {
  if (m === undefined) {
    if (node.members.size >= SWIM_LIMITS.membersMax) return;
    addMember(node, u);
    node.queue.enqueue(u, node.now);
    kickGossip(node);
    return;
  }
  const newLife = u.epoch > m.epoch;
  if (!newLife && (u.epoch < m.epoch || u.inc <= m.inc)) return;
  clearSuspicion(node, m);
  if (newLife) {
    m.epoch = u.epoch;
    m.lastHeardMs = -Infinity;
    m.evidenceAtMs = -Infinity;
    node.watched.delete(m.name);
  }
  m.inc = u.inc;
  if (u.addr !== m.addr) {
    if (node.byAddr.get(m.addr) === m.name) node.byAddr.delete(m.addr);
    m.addr = u.addr;
    node.byAddr.set(u.addr, m.name);
  }
  if (newLife && m.visible === 'alive') {
    // The old life ended unseen; show the new one as a fresh arrival.
    emitStatus(node, m, 'alive', undefined, undefined);
  }
  setStatus(node, m, 'alive', undefined, undefined);
  node.queue.enqueue(u, node.now);
  kickGossip(node);
}

function applySuspect(
  node: SwimNode,
  m: Member,
  u: Extract<Update, { type: 'suspect' | 'dead' }>,
): void {
  if (m.status === 'dead' || m.status === 'left') return;
  if (m.status === 'suspect' && m.suspicion !== null && u.inc === m.inc) {
    // An independent confirmation (Lifeguard §IV.B); re-gossip it so others count it too.
    if (m.suspicion.confirm(u.from)) {
      node.queue.enqueue({ ...u, type: 'suspect' }, node.now);
      kickGossip(node);
    }
    return;
  }
  m.inc = u.inc;
  clearSuspicion(node, m);
  const s = newSuspicion(node, u.from, node.now - u.silentForMs, false);
  startSuspicion(node, m, s, false);
  node.queue.enqueue({ ...u, type: 'suspect' }, node.now);
  kickGossip(node);
}

function applyDead(
  node: SwimNode,
  m: Member,
  u: Extract<Update, { type: 'suspect' | 'dead' }>,
): void {
  if (m.status === 'dead' || m.status === 'left') return;
  if (node.awaitIo && node.config.stallThresholdMs > 0) {
    // Read from the socket buffer right after our own stall: this news may be as old as the
    // stall, and newer news may follow in the same round. Hold it as a suspicion.
    applySuspect(node, m, u);
    return;
  }
  if (
    node.config.deadRumorCheck &&
    m.lastHeardMs > node.now - u.silentForMs + FRESHNESS_MARGIN_MS
  ) {
    // We heard from it after the accuser's silence began: the accuser's view is stale or cut
    // off. Suspect instead, and let the target refute.
    applySuspect(node, m, { ...u, silentForMs: 0 });
    m.nextBuddyMs = node.now;
    m.ownSuspicion = true;
    return;
  }
  clearSuspicion(node, m);
  m.inc = u.inc;
  setStatus(node, m, 'dead', u.from, u.reason === 'evidence' ? 'evidence' : 'rumor');
  node.queue.enqueue(u, node.now);
  kickGossip(node);
}
