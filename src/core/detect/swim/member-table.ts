// The member table: one entry per known member with its epoch, incarnation and status, the
// protocol's status against the visible one (held at `suspect` while flap-damped), and the events
// each change emits. updates.ts applies SWIM's precedence rules (§4.2); this module records the
// outcome, keeps the live count and marks the ring for the watch to recompute.

import { FNV_OFFSET, fnvString } from '../../base/index.js';
import { FlapDamper } from './flap-damper.js';
import type { Address, MemberStatus, Update } from './messages.js';
import { live, type Member, type SwimNode } from './node.js';

/** One member as the application sees it. */
export interface MemberView {
  readonly name: string;
  readonly addr: Address;
  readonly epoch: number;
  readonly inc: number;
  /** The visible status (held at `suspect` while flap-damped). */
  readonly status: MemberStatus;
  /** The protocol's own status. */
  readonly protocolStatus: MemberStatus;
  readonly lastHeardMs: number | null;
  readonly linkUnreachable: boolean;
  readonly damped: boolean;
}

/** The ring position of a member: a hash of its name. */
export function ringKeyOf(name: string): number {
  return fnvString(FNV_OFFSET, name);
}

export function addMember(node: SwimNode, u: Extract<Update, { type: 'alive' }>): void {
  const m: Member = {
    name: u.name,
    ringKey: ringKeyOf(u.name),
    addr: u.addr,
    epoch: u.epoch,
    inc: u.inc,
    status: 'alive',
    visible: 'alive',
    statusSinceMs: node.now,
    lastHeardMs: -Infinity,
    suspicion: null,
    ownSuspicion: false,
    nextBuddyMs: 0,
    evidenceAtMs: -Infinity,
    linkDown: false,
    reassertAtMs: 0,
    damper: node.config.flapDamping === null ? null : new FlapDamper(node.config.flapDamping),
  };
  node.members.set(u.name, m);
  node.byAddr.set(u.addr, u.name);
  node.order.add(u.name);
  node.liveCount++;
  node.ringDirty = true;
  emitStatus(node, m, 'alive', undefined, undefined);
}

export function setStatus(
  node: SwimNode,
  m: Member,
  status: MemberStatus,
  by: string | undefined,
  reason: 'timeout' | 'evidence' | 'rumor' | undefined,
): void {
  if (m.status === status) return;
  const wasLive = live(m);
  const prev = m.status;
  m.status = status;
  m.statusSinceMs = node.now;
  const isLive = live(m);
  if (wasLive !== isLive) {
    node.liveCount += isLive ? 1 : -1;
    node.ringDirty = true;
  }
  if (status === 'alive' || prev === 'alive') node.ringDirty = true;
  if (prev === 'alive' && m.damper !== null && m.damper.flap(node.now)) node.suppressed.add(m.name);
  const visible: MemberStatus =
    status === 'alive' && m.damper?.suppressed === true ? 'suspect' : status;
  if (visible !== m.visible) emitStatus(node, m, visible, by, reason);
}

export function emitStatus(
  node: SwimNode,
  m: Member,
  visible: MemberStatus,
  by: string | undefined,
  reason: 'timeout' | 'evidence' | 'rumor' | undefined,
): void {
  m.visible = visible;
  node.events.push({
    type: visible,
    name: m.name,
    addr: m.addr,
    epoch: m.epoch,
    inc: m.inc,
    atMs: node.now,
    ...(by === undefined ? {} : { by }),
    ...(reason === undefined ? {} : { reason }),
  });
}

export function clearSuspicion(node: SwimNode, m: Member): void {
  m.suspicion = null;
  m.ownSuspicion = false;
  node.suspects.delete(m.name);
}

export function stepDamping(node: SwimNode): void {
  for (const name of [...node.suppressed]) {
    const m = node.members.get(name);
    if (m === undefined || m.damper === null) {
      node.suppressed.delete(name);
      continue;
    }
    if (m.damper.release(node.now)) {
      node.suppressed.delete(name);
      if (m.status === 'alive' && m.visible !== 'alive')
        emitStatus(node, m, 'alive', undefined, undefined);
    }
  }
}

export function view(node: SwimNode, m: Member): MemberView {
  return {
    name: m.name,
    addr: m.addr,
    epoch: m.epoch,
    inc: m.inc,
    status: m.visible,
    protocolStatus: m.status,
    lastHeardMs: Number.isFinite(m.lastHeardMs) ? m.lastHeardMs : null,
    linkUnreachable: m.linkDown,
    damped: m.damper?.suppressed ?? false,
  };
}

export function accusation(
  node: SwimNode,
  type: 'suspect' | 'dead',
  m: Member,
  silentSinceMs: number,
  reason: 'timeout' | 'evidence',
): Update {
  return {
    type,
    name: m.name,
    epoch: m.epoch,
    inc: m.inc,
    from: node.name,
    silentForMs: Math.max(0, node.now - silentSinceMs),
    reason,
  };
}
