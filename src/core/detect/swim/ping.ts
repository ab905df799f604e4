// Pings on the wire: a probe's direct ping and its indirect phase through k relays (SWIM §4.1,
// ping-req), the TCP fallback ping (memberlist's net.go), and relaying for others, with the nack
// a relay sends when the target stays silent (Lifeguard, Dadgar et al. 2018, §IV.A).

import { SWIM_LIMITS } from './config.js';
import type { Address } from './messages.js';
import type { Member, Probe, ProbeKind, SwimNode } from './node.js';

const RELAY_EXPIRE_FACTOR = 3;

/** Ping `m` directly and await its ack: the first phase of a probe or an alarm (SWIM §4.1). */
export function sendProbe(node: SwimNode, kind: ProbeKind, m: Member): Probe {
  const c = node.config;
  const timeout = c.awarenessScalesTimeout
    ? node.awareness.scale(c.probeTimeoutMs)
    : c.probeTimeoutMs;
  // memberlist lets the indirect phase run until the (scaled) probe interval ends.
  const deadline = node.awareness.scale(c.probeDeadlineMs);
  const seq = node.nextSeq();
  const probe: Probe = {
    kind,
    target: m.name,
    seq,
    sentMs: node.now,
    directDeadlineMs: node.now + timeout,
    deadlineMs: node.now + Math.max(deadline, timeout),
    indirect: false,
    expectedNacks: 0,
    nacks: new Set(),
    relays: 0,
  };
  node.awaiting.set(seq, kind === 'probe' ? { kind: 'probe', probe } : { kind: 'alarm', probe });
  const buddy = c.buddy && m.status === 'suspect' ? m.name : undefined;
  node.push(m.addr, { type: 'ping', seq, target: m.name, ...node.base(buddy) }, 'udp');
  return probe;
}

/** No ack in time: ask k relays to ping the target for us (SWIM §4.1 ping-req). */
export function goIndirect(node: SwimNode, p: Probe): void {
  p.indirect = true;
  const c = node.config;
  const m = node.members.get(p.target);
  if (m === undefined) return;
  const relays = node.pickMembers(
    c.indirectChecks,
    (x) => x.name !== p.target && x.status === 'alive',
  );
  for (const r of relays) {
    node.push(r.addr, {
      type: 'pingReq',
      seq: p.seq,
      target: m.name,
      targetAddr: m.addr,
      ...node.base(),
    });
  }
  p.expectedNacks = c.nack ? relays.length : 0;
  p.relays = relays.length;
  if (c.tcpFallback) {
    node.push(m.addr, { type: 'ping', seq: p.seq, target: m.name, ...node.base() }, 'tcp');
  }
}

/** Probe `m` once more through fresh relays, to corroborate our own suspicion. */
export function verify(node: SwimNode, m: Member): void {
  if (node.alarms.has(m.name) || node.alarms.size >= SWIM_LIMITS.watchedMax) return;
  node.alarms.set(m.name, sendProbe(node, 'alarm', m));
}

export function relay(
  node: SwimNode,
  requester: Address,
  requesterSeq: number,
  target: string,
  targetAddr: Address,
): void {
  if (node.relays.size >= SWIM_LIMITS.relaysMax) return;
  const seq = node.nextSeq();
  const c = node.config;
  node.relays.set(seq, {
    requester,
    requesterSeq,
    nackAtMs: node.now + 0.8 * c.probeTimeoutMs,
    expireAtMs: node.now + RELAY_EXPIRE_FACTOR * c.probeTimeoutMs,
    nacked: !c.nack,
  });
  node.push(targetAddr, { type: 'ping', seq, target, ...node.base() });
}

export function stepRelays(node: SwimNode): void {
  for (const [seq, r] of node.relays) {
    if (!r.nacked && node.now >= r.nackAtMs) {
      r.nacked = true;
      node.push(r.requester, { type: 'nack', seq: r.requesterSeq, ...node.base() });
    }
    if (node.now >= r.expireAtMs) node.relays.delete(seq);
  }
}
