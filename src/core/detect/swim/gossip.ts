// Dissemination: gossip rounds that carry the broadcast queue's updates to a few random members
// (SWIM §4.1, infection-style dissemination; memberlist's gossip interval and fan-out), and
// memberlist's periodic push/pull full-state exchange over TCP (its state.go).

import { accusation } from './member-table.js';
import type { Update } from './messages.js';
import { live, type SwimNode } from './node.js';

export function kickGossip(node: SwimNode): void {
  if (node.config.eagerGossip) {
    // As soon as there is news, but never more often than one round per gossip interval.
    const earliest = Math.max(node.now, node.lastGossipRoundMs + node.config.gossipIntervalMs);
    node.nextGossipMs = Math.min(node.nextGossipMs, earliest);
  } else if (node.nextGossipMs < node.now) {
    // Keep the gossip period's grid: the next round is the next multiple of the interval.
    const i = node.config.gossipIntervalMs;
    node.nextGossipMs += Math.ceil((node.now - node.nextGossipMs) / i) * i;
  }
}

export function gossip(node: SwimNode): void {
  if (node.now < node.nextGossipMs) return;
  const c = node.config;
  if (node.queue.size > 0) {
    const targets = node.pickMembers(
      c.gossipNodes,
      (m) => live(m) || (m.status === 'dead' && node.now - m.statusSinceMs < c.gossipToTheDeadMs),
    );
    for (const t of targets) {
      if (node.queue.size === 0) break;
      node.push(t.addr, { type: 'gossip', ...node.base() });
    }
    node.lastGossipRoundMs = node.now;
  }
  node.nextGossipMs = node.now + c.gossipIntervalMs;
}

export function stepPushPull(node: SwimNode): void {
  const c = node.config;
  if (node.now < node.nextPushPullMs || c.pushPullIntervalMs <= 0) return;
  const n = node.liveCount + 1;
  // memberlist's pushPullScale: the interval grows with log2(n) above 32 members.
  const scale = n <= 32 ? 1 : Math.ceil(Math.log2(n) - Math.log2(32)) + 1;
  node.nextPushPullMs = node.now + c.pushPullIntervalMs * scale;
  const [peer] = node.pickMembers(1, (m) => m.status === 'alive');
  if (peer !== undefined) {
    node.push(
      peer.addr,
      { type: 'pushPull', reply: false, state: state(node), ...node.base() },
      'tcp',
    );
  }
}

/** Our whole table as updates, for a push/pull exchange. */
export function state(node: SwimNode): Update[] {
  const out: Update[] = [node.selfAlive()];
  for (const m of node.members.values()) {
    if (m.status === 'alive') {
      out.push({ type: 'alive', name: m.name, addr: m.addr, epoch: m.epoch, inc: m.inc });
    } else if (m.status === 'left') {
      out.push({ type: 'left', name: m.name, epoch: m.epoch, inc: m.inc });
    } else {
      const since = m.suspicion?.silentSinceMs ?? m.statusSinceMs;
      out.push(accusation(node, m.status, m, since, 'timeout'));
    }
  }
  return out;
}
