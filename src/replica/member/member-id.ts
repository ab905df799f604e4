// Member and cluster IDs, derived as etcd derives them: a member's ID from its peer URLs and the
// cluster token, the cluster's from its members' IDs, so every member computes the same IDs from
// the same --initial-cluster without talking. Ours are 48-bit, so that the Raft core can keep
// node IDs as exact JavaScript numbers; on the wire they are uint64 like etcd's.
import { createHash } from 'node:crypto';
import { nodeId, type NodeId } from '../../core/base/units.js';

function hash48(text: string): number {
  const d = createHash('sha256').update(text).digest();
  const n = d.readUIntBE(0, 6);
  return n === 0 ? 1 : n;
}

export function memberIdOf(peerUrls: readonly string[], token: string): NodeId {
  return nodeId(hash48(`member\n${[...peerUrls].sort().join(',')}\n${token}`));
}

export function clusterIdOf(memberIds: readonly NodeId[], token: string): bigint {
  return BigInt(hash48(`cluster\n${[...memberIds].sort((a, b) => a - b).join(',')}\n${token}`));
}

export function hexId(id: bigint | number): string {
  return BigInt(id).toString(16);
}

/** The token in the IDs of members added at run time (MemberAdd and the joiner agree on it). */
export const JOINED_MEMBER_TOKEN = '';
