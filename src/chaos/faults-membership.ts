// member-rejoin: a member removed from the cluster and added again, under load. The steps are
// etcd's runtime reconfiguration for replacing a member (etcd Documentation/op-guide/
// runtime-configuration.md, "Replace a failed member"): MemberRemove it through the Cluster
// service, stop it, wipe its data directory, MemberAdd it with its peer URL, and start it with
// --initial-cluster-state=existing (Cluster.restart with `fresh`), so that it takes the
// configuration and the data from the leader's snapshot (member-changes.ts). The calls go through
// the JSON gateway (/v3/cluster/member/*), which etcd's gRPC gateway serves as well.
//
// The member is never the leader: a leader removing itself steps down only once the change is
// committed, which is a different step (moving leadership first would test MoveLeader instead). A member added again
// gets a new ID (computed from its peer URLs alone, as MemberAdd does: member-id.ts), which
// ctx.members.ids learns so that leaders are still named by index. Changes are single-server
// (Raft thesis §4.1), so the remaining members keep a quorum throughout.
import { sleep } from '../launcher/poll.js';
import { probeStatus } from '../launcher/readiness.js';
import { currentLeader, otherThan } from './fault-kit.js';
import type { NemesisContext } from './nemesis.js';

/** Hang guards, not speed checks. */
const changeTimeoutMs = 60_000;
const joinTimeoutMs = 90_000;
const callTimeoutMs = 10_000;
const retryPauseMs = 500;

class GatewayError extends Error {
  override readonly name = 'GatewayError';
}

async function post(endpoint: string, path: string, body: unknown, signal: AbortSignal) {
  const res = await fetch(`${endpoint}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.any([signal, AbortSignal.timeout(callTimeoutMs)]),
  });
  const text = await res.text();
  if (!res.ok) throw new GatewayError(`${path}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Call `path` on the leader, else on any member but `not`, again until one answers or the bound
 * passes; `settled` turns an error that says the change is already in (a retry of a call whose
 * answer was lost) into a result.
 */
async function callCluster<T>(
  ctx: NemesisContext,
  not: number,
  path: string,
  body: unknown,
  ok: (r: Record<string, unknown>) => T,
  settled: (message: string) => Promise<T | undefined>,
): Promise<T> {
  const c = ctx.members.cluster;
  const deadline = performance.now() + changeTimeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    const leader = await currentLeader(ctx);
    const order = [
      ...(leader === undefined || leader === not ? [] : [leader]),
      ...c.endpoints.map((_, i) => i).filter((i) => i !== not && i !== leader),
    ];
    for (const i of order) {
      try {
        return ok(await post(c.endpoints[i] ?? '', path, body, ctx.signal));
      } catch (e) {
        if (ctx.signal.aborted) throw e;
        last = e instanceof Error ? e.message : String(e);
        const r = await settled(last);
        if (r !== undefined) return r;
      }
    }
    await sleep(retryPauseMs, ctx.signal);
  }
  throw new GatewayError(`${path} not done within ${changeTimeoutMs} ms: ${last}`);
}

function idOf(v: unknown): string | undefined {
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

/** The ID the member list gives the member with `peerUrl`, if it is there. */
async function listedId(
  ctx: NemesisContext,
  not: number,
  peerUrl: string,
): Promise<string | undefined> {
  const r = await callCluster(
    ctx,
    not,
    '/v3/cluster/member/list',
    { linearizable: true },
    (x) => x,
    () => Promise.resolve(undefined),
  );
  const members = Array.isArray(r.members) ? (r.members as Record<string, unknown>[]) : [];
  const m = members.find((y) => Array.isArray(y.peerURLs) && y.peerURLs.includes(peerUrl));
  return idOf(m?.ID);
}

/**
 * Member `x`, whether it runs or not: remove it, stop it, wipe its data, add it again, start it
 * fresh and wait until it names a leader under its new ID. The caller's awaitRecovery then asks
 * it for a linearizable read, which it serves only once it has applied what was committed.
 */
export async function replaceMember(ctx: NemesisContext, x: number, why: string): Promise<void> {
  try {
    await replace(ctx, x, why);
  } catch (e) {
    if (ctx.signal.aborted || !(e instanceof GatewayError)) throw e;
    ctx.anomaly({
      workload: 'cluster',
      kind: 'member-change-failed',
      message: `replacing ${ctx.members.names[x] ?? x} failed: ${e.message}`,
      atMs: performance.now(),
      excerpt: [],
    });
    // Leave it running as it was, so the run can go on.
    const c = ctx.members.cluster;
    if (c.pids[x] === undefined) await c.restart(x).catch(() => undefined);
  }
}

async function replace(ctx: NemesisContext, x: number, why: string): Promise<void> {
  const c = ctx.members.cluster;
  const name = ctx.members.names[x] ?? String(x);
  const oldId = ctx.members.ids[x] ?? '';
  const peerUrl = c.peerUrls[x] ?? '';
  await callCluster(
    ctx,
    x,
    '/v3/cluster/member/remove',
    { ID: oldId },
    () => true,
    (m) => Promise.resolve(/member not found/i.test(m) ? true : undefined),
  );
  ctx.timeline.add('note', `${name} (ID ${oldId}) removed`);
  await c.kill(x, 'SIGKILL');
  const added = await callCluster(
    ctx,
    x,
    '/v3/cluster/member/add',
    { peerURLs: [peerUrl] },
    (r) => idOf((r.member as Record<string, unknown> | undefined)?.ID),
    (m) => (/exist/i.test(m) ? listedId(ctx, x, peerUrl) : Promise.resolve(undefined)),
  );
  if (added === undefined) throw new GatewayError(`MemberAdd of ${peerUrl} gave no member ID`);
  ctx.members.ids[x] = added;
  ctx.timeline.add('note', `${peerUrl} added as ID ${added}`);
  await c.restart(x, {}, { fresh: true });
  const deadline = performance.now() + joinTimeoutMs;
  const endpoint = c.endpoints[x] ?? '';
  let joined = false;
  while (!joined && performance.now() < deadline) {
    const s = await probeStatus(endpoint, ctx.signal).catch(() => undefined);
    joined = s?.memberId === added && s.leader !== undefined && s.leader !== '0';
    if (!joined) await sleep(retryPauseMs, ctx.signal);
  }
  // Not yet: the recovery wait that follows every step judges it (no-recovery past its bound).
  ctx.timeline.add(
    'heal',
    joined
      ? `${name} rejoined with a wiped data dir (${why})`
      : `${name} restarted with a wiped data dir (${why}), not yet joined after ${joinTimeoutMs} ms`,
  );
}

export async function memberRejoin(ctx: NemesisContext): Promise<void> {
  const leader = await currentLeader(ctx);
  const x = otherThan(ctx.prng, ctx.members.cluster.size, leader);
  const name = ctx.members.names[x] ?? String(x);
  ctx.timeline.add('member-rejoin', `remove ${name}, wipe it, add it again`);
  await replaceMember(ctx, x, 'rejoin');
}
