// How a launcher starts a tenure member: the node options it runs with, and the flags of a
// member of a new cluster.
//
// Node options: Every launcher in the repository (`tenure up` and
// `npm start`, `tenure bench`, the demo and the test clusters) passes them; start members
// yourself as `node --max-semi-space-size=2 bin/tenure start ...` to get the same.
//
// --max-semi-space-size=2 (MiB; V8's default on 64-bit is 16): a member's young objects are
// requests and log entries that live for milliseconds, and what survives (the store, the log)
// moves to the old generation anyway. The smaller nursery lowered the peak RSS of each member of
// a 3-member cluster after 24,000 puts from 126-145 MiB to 106-112 MiB at the same CPU per put
// (285 against 287 µs at 64 in flight; /tmp probe on the project's 2-core machine, 2026-11-30).
export const MEMBER_NODE_ARGS: readonly string[] = ['--max-semi-space-size=2'];

/** What a launcher knows of a member of a new cluster. */
export interface NewMemberSpec {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
}

/**
 * The etcd flags that start `m` as a member of a new cluster (they mean the same to etcd and to
 * `tenure start`); `initialCluster` is `name=peerUrl,…` for every member.
 */
export function newMemberFlags(m: NewMemberSpec, initialCluster: string, token: string): string[] {
  return [
    `--name=${m.name}`,
    `--data-dir=${m.dataDir}`,
    `--listen-client-urls=${m.clientUrl}`,
    `--advertise-client-urls=${m.clientUrl}`,
    `--listen-peer-urls=${m.peerUrl}`,
    `--initial-advertise-peer-urls=${m.peerUrl}`,
    `--initial-cluster=${initialCluster}`,
    '--initial-cluster-state=new',
    `--initial-cluster-token=${token}`,
  ];
}
