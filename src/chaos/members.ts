// The run's members: N tenure processes inside the namespace, member i on 127.0.0.(i+1) with the
// client port 2379 and the peer port 2380, through the launcher (src/launcher: the command line,
// logs in files, every process tracked and stopped by its PID). What the nemesis needs on top:
// who leads as each member sees it, by member index.
import { join } from 'node:path';
import { startCluster, type Cluster } from '../launcher/cluster.js';
import { probeStatus } from '../launcher/readiness.js';
import { CLIENT_PORT, memberHost, PEER_PORT } from './links.js';

/** A hang guard for the first start, not a speed check. */
const startTimeoutMs = 60_000;

export interface Members {
  readonly cluster: Cluster;
  readonly names: readonly string[];
  /**
   * Member IDs (decimal, as Status says them) by index, learned from the first probes. A member
   * removed and added again (faults-membership.ts) gets a new ID, written here in its place.
   */
  readonly ids: string[];
}

export async function startMembers(
  size: number,
  dir: string,
  tenureBin: string | undefined,
  signal: AbortSignal,
): Promise<Members> {
  const cluster = await startCluster({
    kind: 'tenure',
    size,
    dir: join(dir, 'members'),
    host: memberHost,
    ports: {
      client: Array.from({ length: size }, () => CLIENT_PORT),
      peer: Array.from({ length: size }, () => PEER_PORT),
    },
    memberName: (i) => `m${i + 1}`,
    token: 'tenure-chaos',
    logs: 'file',
    readyTimeoutMs: startTimeoutMs,
    signal,
    ...(tenureBin === undefined ? {} : { command: { tenureBin } }),
  });
  const probes = await probeAll(cluster, signal);
  const ids = probes.map((p, i) => {
    if (p.memberId === undefined) throw new Error(`member ${i} gave no member ID after start`);
    return p.memberId;
  });
  return { cluster, names: cluster.names, ids };
}

/** What a member says of itself, from its Status (the ID undefined if it did not answer). */
export interface StatusProbe {
  readonly memberId?: string;
  readonly leader?: string;
}

/**
 * Every member's Status, asked at once. Status is served from the member's own state, so a
 * member cut off from its peers still answers (a linearizable read would wait for a leader).
 */
export function probeAll(cluster: Cluster, signal?: AbortSignal): Promise<StatusProbe[]> {
  return Promise.all(
    cluster.endpoints.map((e) =>
      probeStatus(e, signal).catch((err: unknown) => {
        if (signal?.aborted === true) throw err;
        return {};
      }),
    ),
  );
}

/**
 * The index of the leader member i names, null if it answered and names none, undefined if it
 * did not answer (down, paused).
 */
export function leaderSeenBy(m: Members, p: StatusProbe): number | null | undefined {
  if (p.memberId === undefined) return undefined;
  if (p.leader === undefined || p.leader === '0') return null;
  const i = m.ids.indexOf(p.leader);
  return i < 0 ? null : i;
}
