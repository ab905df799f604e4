// Trust a cut only once it shows: every link meant to be cut drops a SYN from its source
// address, and the members the shape cuts off from every majority report no leader (after a
// one-way cut of the leader, the others stop naming it). A partition that silently did not take
// would make a clean run prove nothing.
import { connect } from 'node:net';
import { sleep } from '../launcher/poll.js';
import { linkName, memberHost, PEER_PORT, type Link } from './links.js';
import { leaderSeenBy, probeAll } from './members.js';
import type { NemesisContext } from './nemesis.js';
import type { Shape } from './shapes.js';

/** A hang guard, not a speed check: a cut must show within this. */
const cutSeenTimeoutMs = 20_000;
/** A SYN through a cut link gets no answer within this (on loopback an answer takes µs). */
const probeConnectMs = 500;
const probeIntervalMs = 100;

/** Whether a SYN from `from`'s address to `to`'s peer port goes unanswered (the rule drops it). */
function linkBlocked(l: Link): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({
      host: memberHost(l.to),
      port: PEER_PORT,
      localAddress: memberHost(l.from),
    });
    const done = (blocked: boolean): void => {
      s.destroy();
      resolve(blocked);
    };
    s.setTimeout(probeConnectMs, () => done(true));
    s.once('connect', () => done(false));
    // Refused (nothing listening) also means the SYN got through the rules.
    s.once('error', () => done(false));
  });
}

/** Probe every cut link; an anomaly if one let a SYN through. */
export async function verifyLinks(ctx: NemesisContext, links: readonly Link[]): Promise<boolean> {
  const open = (await Promise.all(links.map(async (l) => ((await linkBlocked(l)) ? [] : [l]))))
    .flat()
    .map((l) => linkName(l, ctx.members.names));
  if (open.length === 0) return true;
  ctx.anomaly({
    workload: 'cluster',
    kind: 'cut-not-held',
    message: `links meant to be cut let a connection through: ${open.join(', ')}`,
    atMs: performance.now(),
    excerpt: [],
  });
  return false;
}

/** Wait until the members the shape cuts off name no leader (and those told to, another one). */
export async function verifyShape(ctx: NemesisContext, shape: Shape): Promise<boolean> {
  if (shape.leaderless.length === 0 && shape.abandon === undefined) return true;
  const deadline = performance.now() + cutSeenTimeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    const probes = await probeAll(ctx.members.cluster, ctx.signal);
    const seen = probes.map((p) => leaderSeenBy(ctx.members, p));
    const lost = shape.leaderless.every((i) => seen[i] === null);
    const a = shape.abandon;
    const abandoned = a === undefined || a.by.every((i) => seen[i] !== a.leader);
    if (lost && abandoned) return true;
    last = seen
      .map(
        (l, i) =>
          `${ctx.members.names[i]}: ${l === undefined ? '?' : l === null ? 'none' : ctx.members.names[l]}`,
      )
      .join(', ');
    await sleep(probeIntervalMs, ctx.signal);
  }
  ctx.anomaly({
    workload: 'cluster',
    kind: 'cut-not-seen',
    message: `after ${shape.description}, within ${cutSeenTimeoutMs} ms the members did not see it (leaders named: ${last})`,
    atMs: performance.now(),
    excerpt: [],
  });
  return false;
}
