// Finding the Raft leader the way etcdctl does: Maintenance.Status on every endpoint
// (`header.member_id` of the answering member, `leader` as it sees it).
import type { Etcd3 } from 'etcd3';
import type { BenchTlsFiles } from './tls.js';
import { bareClient } from './etcd3-clients.js';

export interface MemberStatus {
  readonly memberId: string;
  readonly leader: string;
  readonly raftTerm: string;
}

/** Status bound per endpoint, in ms. */
const statusDeadlineMs = 1_000;

export async function memberStatus(client: Etcd3): Promise<MemberStatus> {
  const s = await client.maintenance.status();
  return { memberId: s.header.member_id, leader: s.leader, raftTerm: s.raftTerm };
}

/** Status of each endpoint; undefined where the member did not answer. */
export async function statuses(
  endpoints: readonly string[],
  tls?: BenchTlsFiles,
): Promise<(MemberStatus | undefined)[]> {
  const clients = endpoints.map((e) => bareClient([e], statusDeadlineMs, tls));
  try {
    return await Promise.all(clients.map((c) => memberStatus(c).catch(() => undefined)));
  } finally {
    for (const c of clients) c.close();
  }
}

/** Index (into `endpoints`) of the member every answering member names as leader, if any. */
export function leaderIndex(all: readonly (MemberStatus | undefined)[]): number | undefined {
  const answered = all.filter((s): s is MemberStatus => s !== undefined);
  const first = answered[0];
  if (first === undefined || first.leader === '0') return undefined;
  if (answered.some((s) => s.leader !== first.leader)) return undefined;
  const i = all.findIndex((s) => s?.memberId === first.leader);
  return i >= 0 ? i : undefined;
}
