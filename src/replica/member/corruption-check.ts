// etcd's corruption checks (etcd server/etcdserver/corrupt.go), on tenure's members:
//
// - initial (`--experimental-initial-corrupt-check`): a member that restarts with data hashes
//   its key space at its own revision and asks every peer for theirs at the same revision; a
//   peer with the same compact revision and another hash means this member's data differs, and
//   it refuses to start (CheckInitialHashKV).
// - periodic (`--experimental-corrupt-check-time`): the leader hashes at its revision, asks the
//   peers at that revision, confirms its leadership and hashes again, and raises a CORRUPT alarm
//   (through the log, so every member refuses writes) for the first member found differing
//   (checkHashKV): a peer at the leader's compact revision with another hash, a peer ahead of
//   the leader, or the leader itself when its two hashes of one revision differ.
//
// etcd 3.4 asks its peers over their client URLs, which fails once auth is on (HashKV needs
// root) and needs client certificates under --client-cert-auth; etcd 3.5 moved the request to the
// peer port (/members/hashkv). tenure asks over the peer channel too (a `hashKV` forwarding
// frame), so neither auth nor client TLS is in the way. As in etcd, a leader whose own key space
// is the one that differs blames the first peer it compares.
import type { NodeId } from '../../core/base/units.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import { ERR_COMPACTED, ERR_FUTURE_REV } from '../../core/state/etcd-errors.js';
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { Cancel, Clock } from '../io.js';
import { computeHashKv, type HashKvAnswer } from './hash-kv.js';
import type { MemberLog } from './member-config.js';
import { hexId } from './member-id.js';
import { etcdErrorOf } from './request-error.js';

/** One peer's answer: its hash, or why there is none. */
export type PeerHash =
  | { readonly ok: true; readonly answer: HashKvAnswer }
  | { readonly ok: false; readonly error: EtcdError };

export interface CorruptionCheckDeps {
  readonly selfId: NodeId;
  readonly machine: EtcdMachine;
  readonly clock: Clock;
  readonly log: MemberLog;
  /** The other members of the configuration, voters and learners. */
  peers(): readonly NodeId[];
  /** Ask `peer` for its hash at `revision`; never rejects. */
  askPeer(peer: NodeId, revision: number): Promise<PeerHash>;
  /** Resolves once this member has applied everything committed when called (ReadIndex). */
  readBarrier(): Promise<void>;
  isLeader(): boolean;
  /** Propose a CORRUPT alarm for `memberId`. */
  raiseCorrupt(memberId: bigint): Promise<void>;
}

/** The member's key space differs from a peer's: it must not start (etcd's error text). */
export class DataInconsistencyError extends Error {
  override readonly name = 'DataInconsistencyError';
  readonly code = 'DATA_INCONSISTENCY';
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** etcd's CheckInitialHashKV: throws DataInconsistencyError when a peer's hash differs. */
export async function checkInitialHashKv(d: CorruptionCheckDeps): Promise<void> {
  const self = hexId(d.selfId);
  d.log.info({ localMemberId: self }, 'starting initial corruption check');
  const local = await computeHashKv(d.machine, 0, d.clock);
  const peers = d.peers();
  const answers = await Promise.all(peers.map((p) => d.askPeer(p, local.revision)));
  let mismatch = 0;
  answers.forEach((a, i) => {
    const peer = hexId(peers[i] as NodeId);
    const fields = {
      localMemberId: self,
      localRevision: local.revision,
      localCompactRevision: local.compactRevision,
      localHash: local.hash,
      remotePeerId: peer,
    };
    if (!a.ok) {
      const why =
        a.error.message === ERR_FUTURE_REV.message
          ? 'cannot fetch hash from slow remote peer'
          : a.error.message === ERR_COMPACTED.message
            ? 'cannot fetch hash from remote peer; local member is behind'
            : 'failed hash kv request';
      d.log.warn({ ...fields, err: a.error.message }, why);
      return;
    }
    const remote = {
      ...fields,
      remoteCompactRevision: a.answer.compactRevision,
      remoteHash: a.answer.hash,
    };
    if (a.answer.hash === local.hash) return;
    if (a.answer.compactRevision === local.compactRevision) {
      d.log.warn(remote, 'found different hash values from remote peer');
      mismatch++;
    } else d.log.warn(remote, 'found different compact revision values from remote peer');
  });
  if (mismatch > 0) throw new DataInconsistencyError(`${self} found data inconsistency with peers`);
  d.log.info({ localMemberId: self }, 'initial corruption checking passed; no corruption');
}

/** etcd's checkHashKV, run by the leader: raises a CORRUPT alarm for a member that differs. */
export async function checkHashKv(d: CorruptionCheckDeps): Promise<void> {
  const first = await computeHashKv(d.machine, 0, d.clock);
  const rev = first.revision;
  const peers = d.peers();
  const answers = await Promise.all(peers.map((p) => d.askPeer(p, rev)));
  await d.readBarrier();
  const second = await computeHashKv(d.machine, 0, d.clock);

  let alarmed = false;
  const mismatch = (id: bigint): void => {
    if (alarmed) return;
    alarmed = true;
    d.raiseCorrupt(id).catch((e: unknown) =>
      d.log.warn({ member: hexId(id), err: errorText(e) }, 'raising the CORRUPT alarm failed'),
    );
  };
  // Nothing was written between the two hashes, yet they differ: this member's own store.
  if (
    second.hash !== first.hash &&
    second.revision === rev &&
    second.compactRevision === first.compactRevision
  ) {
    d.log.warn(
      { revision: rev, hash1: first.hash, hash2: second.hash },
      'found hash mismatch with itself',
    );
    mismatch(BigInt(d.selfId));
  }
  let checked = 0;
  answers.forEach((a, i) => {
    if (!a.ok) return;
    checked++;
    const id = BigInt(peers[i] as NodeId);
    const peer = { followerPeerId: hexId(id) };
    const r = a.answer;
    if (r.revision > second.revision) {
      d.log.warn(
        { ...peer, leaderRevision: second.revision, followerRevision: r.revision },
        "revision from follower must be less than or equal to leader's",
      );
      mismatch(id);
    }
    if (r.compactRevision > second.compactRevision) {
      d.log.warn(
        {
          ...peer,
          leaderCompactRevision: second.compactRevision,
          followerCompactRevision: r.compactRevision,
        },
        "compact revision from follower must be less than or equal to leader's",
      );
      mismatch(id);
    }
    if (r.compactRevision === first.compactRevision && r.hash !== first.hash) {
      d.log.warn(
        {
          ...peer,
          revision: rev,
          leaderCompactRevision: first.compactRevision,
          leaderHash: first.hash,
          followerCompactRevision: r.compactRevision,
          followerHash: r.hash,
        },
        'same compact revision then hashes must match',
      );
      mismatch(id);
    }
  });
  d.log.info({ peersChecked: checked, revision: rev }, 'finished peer corruption check');
}

/** etcd's monitorKVHash: every `intervalMs`, the leader checks; one check at a time. */
export function monitorKvHash(d: CorruptionCheckDeps, intervalMs: number): Cancel {
  let running = false;
  d.log.info({ intervalMs }, 'enabled corruption checking');
  return d.clock.every(intervalMs, () => {
    if (running || !d.isLeader()) return;
    running = true;
    checkHashKv(d)
      .catch((e: unknown) =>
        d.log.warn({ err: etcdErrorOf(e)?.message ?? errorText(e) }, 'failed to check hash KV'),
      )
      .finally(() => (running = false));
  });
}
