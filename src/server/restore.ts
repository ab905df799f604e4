// `tenure snapshot restore` and `tenure snapshot status`: a data directory for a new cluster
// from a tenure snapshot file (backup-file.ts), as `etcdctl snapshot restore` makes one from an
// etcd snapshot (clientv3/snapshot/v3_snapshot.go, Restore): the key space, leases, auth and
// alarms from the file, and a member table and Raft configuration of the members given, so that
// `tenure start` with the same --name, --initial-cluster and --initial-cluster-token brings up
// a cluster of its own (its ID comes from the new members, as etcd's does).
//
// What is written, for each member's directory:
//   member-id, cluster-id   the identity files `tenure start` reads (node.ts)
//   snap                    a Raft snapshot at index I (the file's applied index), term 1, with
//                           every given member a voter, holding the file's state under the new
//                           member table (etcd writes its snapshot at index = member count)
//   wal                     a hard state: term 1, no vote, commit I
// A new leader then refreshes every lease's TTL on its own clock before any can expire, as after
// any election (lease-clock.ts); simple tokens are not in a snapshot and clients log in again.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { fstatSync, readSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { logIndex, nodeId, term, type NodeId } from '../core/base/units.js';
import { EtcdMachine } from '../core/state/etcd-machine.js';
import type { InitialMember } from '../replica/member/member-config.js';
import { clusterIdOf, hexId, memberIdOf } from '../replica/member/member-id.js';
import {
  encodeServerSnapshot,
  splitServerSnapshot,
  type MemberRecord,
} from '../replica/member/server-machine.js';
import { encodeHardState, encodeSnapshot, SNAP_FILE, WAL_FILE } from '../replica/wal.js';
import { verifyBackup, type BackupHeader } from './backup-file.js';
import { CLUSTER_ID_FILE, MEMBER_ID_FILE } from './node.js';

/** Bytes read between two progress reports. */
const READ_STEP_BYTES = 64 * 1024 * 1024;

export type RestorePhase = 'read' | 'verify' | 'decode' | 'write';
export type ProgressFn = (phase: RestorePhase, doneBytes: number, totalBytes: number) => void;

/** A restore refused before anything was written: bad flags, a used directory, a bad file. */
export class RestoreError extends Error {
  override readonly name = 'RestoreError';
  readonly code = 'RESTORE_REFUSED';
}

/** What `tenure snapshot status` shows of a file (etcdctl's fields first). */
export interface SnapshotStatus {
  /** HashKV at the file's revision: what `etcdctl endpoint hashkv` said of the member then. */
  readonly hash: number;
  readonly revision: number;
  /** Keys live at the revision (etcdctl counts its bbolt entries instead). */
  readonly totalKey: number;
  /** The file's size in bytes. */
  readonly totalSize: number;
  readonly compactRevision: number;
  /** Estimated bytes of the key space, history included (Status's dbSize on the member). */
  readonly storeBytes: number;
  readonly leases: number;
  readonly authEnabled: boolean;
  readonly users: number;
  readonly roles: number;
  readonly alarms: readonly string[];
  /** The members of the cluster the file came from. */
  readonly members: readonly string[];
  readonly appliedIndex: number;
  readonly createdAtMs: number;
}

interface Loaded {
  readonly header: BackupHeader;
  readonly fileBytes: number;
  readonly members: readonly MemberRecord[];
  /** The key-space part of the payload (a view into the file). */
  readonly etcd: Uint8Array;
  readonly machine: EtcdMachine;
}

/** Read the whole file, `onProgress` told as it goes. */
function readWhole(path: string, onProgress?: ProgressFn): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new RestoreError(`cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    const size = fstatSync(fd).size;
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, out, at, Math.min(READ_STEP_BYTES, size - at), at);
      if (n === 0) throw new RestoreError(`${path} ended at byte ${at} of ${size} while read`);
      at += n;
      onProgress?.('read', at, size);
    }
    return out;
  } finally {
    closeSync(fd);
  }
}

/** Read, verify (length, header, SHA-256) and decode a snapshot file; RestoreError if bad. */
function load(path: string, onProgress?: ProgressFn): Loaded {
  const file = readWhole(path, onProgress);
  let verified: ReturnType<typeof verifyBackup>;
  try {
    verified = verifyBackup(file, (done, total) => onProgress?.('verify', done, total));
  } catch (e) {
    throw new RestoreError(`${path}: ${(e as Error).message}`);
  }
  onProgress?.('decode', 0, verified.payload.length);
  try {
    const { members, etcd } = splitServerSnapshot(verified.payload);
    const machine = new EtcdMachine();
    machine.restore(etcd);
    onProgress?.('decode', verified.payload.length, verified.payload.length);
    return { header: verified.header, fileBytes: file.length, members, etcd, machine };
  } catch (e) {
    // The digest matched, so the member wrote it so: another tenure version's layout, or a bug.
    throw new RestoreError(`${path}: the snapshot does not decode: ${(e as Error).message}`);
  }
}

export function snapshotStatus(path: string, onProgress?: ProgressFn): SnapshotStatus {
  return statusOf(path, load(path, onProgress));
}

function statusOf(path: string, l: Loaded): SnapshotStatus {
  const m = l.machine;
  const plan = m.hashKv(0);
  if ('code' in plan) throw new RestoreError(`${path}: ${plan.message}`);
  while (!plan.job.step());
  const count = m.range({ key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0), countOnly: true });
  if ('code' in count) throw new RestoreError(`${path}: ${count.message}`);
  const auth = m.auth.toData();
  return {
    hash: plan.job.hash,
    revision: m.revision,
    totalKey: count.count,
    totalSize: l.fileBytes,
    compactRevision: plan.compactRevision,
    storeBytes: m.sizeBytes,
    leases: m.leaseLeases().leases.length,
    authEnabled: auth.enabled,
    users: auth.users.length,
    roles: auth.roles.length,
    alarms: m.alarms().map((a) => `memberID:${a.memberId} alarm:${a.alarm}`),
    members: l.members.map((r) => r.name).sort(),
    appliedIndex: l.header.appliedIndex,
    createdAtMs: l.header.createdAtMs,
  };
}

export interface RestoreOptions {
  readonly snapshotPath: string;
  readonly dataDir: string;
  /** This member's --name; it must be in `initialCluster`. */
  readonly name: string;
  readonly initialCluster: readonly InitialMember[];
  readonly initialClusterToken: string;
  /** This member's peer URLs; they must be the ones `initialCluster` gives it. */
  readonly initialAdvertisePeerUrls: readonly string[];
  readonly onProgress?: ProgressFn;
}

export interface RestoreResult {
  readonly memberId: string;
  readonly clusterId: string;
  readonly members: readonly { readonly name: string; readonly id: string }[];
  /** The Raft index and term the new cluster starts from. */
  readonly index: number;
  readonly term: number;
  readonly status: SnapshotStatus;
}

/** The new cluster's members and IDs, after etcd's checks (VerifyBootstrap). */
function newMembers(o: RestoreOptions): { self: NodeId; ids: NodeId[]; table: MemberRecord[] } {
  const self = o.initialCluster.find((m) => m.name === o.name);
  if (self === undefined)
    throw new RestoreError(`--initial-cluster has no member named '${o.name}' (--name)`);
  const same = (a: readonly string[], b: readonly string[]): boolean =>
    a.length === b.length && [...a].sort().every((u, i) => u === [...b].sort()[i]);
  if (!same(self.peerUrls, o.initialAdvertisePeerUrls))
    throw new RestoreError(
      `--initial-cluster has ${o.name}=${self.peerUrls.join(',')} but ` +
        `--initial-advertise-peer-urls is ${o.initialAdvertisePeerUrls.join(',')}`,
    );
  const ids: NodeId[] = [];
  const table: MemberRecord[] = [];
  for (const m of o.initialCluster) {
    const id = memberIdOf(m.peerUrls, o.initialClusterToken);
    if (ids.includes(id))
      throw new RestoreError(`--initial-cluster lists peer URLs ${m.peerUrls[0]} twice`);
    ids.push(id);
    table.push({ id: String(id), name: m.name, peerUrls: m.peerUrls, clientUrls: [] });
  }
  return { self: memberIdOf(self.peerUrls, o.initialClusterToken), ids, table };
}

/** Write `bytes` as `dir/name` so that a crash leaves it whole or absent. */
function writeDurably(dir: string, name: string, bytes: Uint8Array): void {
  const tmp = join(dir, `${name}.tmp`);
  const fd = openSync(tmp, 'w');
  try {
    for (let at = 0; at < bytes.length;)
      at += writeSync(fd, bytes, at, Math.min(READ_STEP_BYTES, bytes.length - at));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, name));
}

/** Make a new member's data directory from a snapshot file; nothing is written if refused. */
export function restoreSnapshot(o: RestoreOptions): RestoreResult {
  const { self, ids, table } = newMembers(o);
  if (existsSync(o.dataDir) && readdirSync(o.dataDir).length > 0)
    throw new RestoreError(`data-dir "${o.dataDir}" not empty or could not be read`);
  const l = load(o.snapshotPath, o.onProgress);
  const status = statusOf(o.snapshotPath, l);
  const index = Math.max(1, l.machine.appliedIndex);
  const t = 1;
  const clusterId = clusterIdOf(ids, o.initialClusterToken);
  const data = encodeServerSnapshot(table, l.etcd);
  const snap = encodeSnapshot({
    index: logIndex(index),
    term: term(t),
    conf: { voters: ids, learners: [] },
    data,
  });
  o.onProgress?.('write', 0, snap.length);
  mkdirSync(o.dataDir, { recursive: true });
  writeDurably(o.dataDir, MEMBER_ID_FILE, Buffer.from(`${hexId(self)}\n`));
  writeDurably(o.dataDir, CLUSTER_ID_FILE, Buffer.from(`${hexId(clusterId)}\n`));
  writeDurably(o.dataDir, SNAP_FILE, snap);
  writeDurably(
    o.dataDir,
    WAL_FILE,
    encodeHardState({ term: term(t), vote: nodeId(0), commit: logIndex(index) }),
  );
  const dirFd = openSync(o.dataDir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  o.onProgress?.('write', snap.length, snap.length);
  return {
    memberId: hexId(self),
    clusterId: hexId(clusterId),
    members: table.map((m) => ({ name: m.name, id: hexId(BigInt(m.id)) })),
    index,
    term: t,
    status,
  };
}
