// etcdserverpb.Maintenance (etcd server/etcdserver/api/v3rpc/maintenance.go). Status is what
// `etcdctl endpoint status` and tools use to find the leader; Alarm GET is half of `etcdctl
// endpoint health`. Alarms are replicated state (core/state/alarms.ts): ACTIVATE and DEACTIVATE
// go through the log as in etcd, GET reads the applied state after a read barrier (etcd sends
// GET through the log too: either way it sees every alarm committed before it). HashKV hashes
// the key space at a revision (mvcc.ts KvHashJob); Snapshot streams the member's state in
// etcd's envelope (backup-file.ts). Defragment has nothing to do: the key space lives in memory
// and its files are rewritten whole at each snapshot, so there is no free space inside them to
// give back; it stays a cheap no-op behind etcd's admin check. MoveLeader hands leadership on
// (move-leader.ts); Downgrade is not offered.
import { createHash } from 'node:crypto';
import type { AlarmMember, AlarmType } from '../../core/state/alarms.js';
import { ALARM_TYPES } from '../../core/state/alarms.js';
import type { KvBackend } from '../../replica/member/backend.js';
import { backupChunks, backupPaddingBytes, encodeBackupHeader } from '../backup-file.js';
import type { CallInfo } from './convert.js';
import type { ApiService } from './convert.js';
import { asMessage, bigintField, enumField, numberField, toProtoHeader } from './convert.js';
import { ApiError, unimplemented } from './status.js';
import { authOn, requireMaintenanceAdmin } from './auth-identity.js';
import { moveLeaderHandler } from './move-leader.js';

const MAINTENANCE = '/etcdserverpb.Maintenance';
/** Blob bytes per SnapshotResponse: etcd's send buffer (maintenance.go, 32 KiB). */
export const SNAPSHOT_CHUNK_BYTES = 32 * 1024;

const notOffered = (method: string) => (): Promise<never> =>
  Promise.reject(new ApiError(unimplemented(method)));

/** etcdserverpb.AlarmMember as proto-loader encodes it. */
const toProtoAlarm = (a: AlarmMember): object => ({
  memberID: a.memberId.toString(),
  alarm: a.alarm,
});

/**
 * An alarm as Status's `errors` lists it: the Go proto text form of AlarmMember, with its
 * trailing space (etcd 3.4.23: "memberID:13668033151171901709 alarm:CORRUPT ").
 */
const alarmText = (a: AlarmMember): string => `memberID:${a.memberId} alarm:${a.alarm} `;

function alarmType(m: ReturnType<typeof asMessage>): AlarmType {
  const t = enumField(m, 'alarm', 'NONE');
  if (!(ALARM_TYPES as readonly string[]).includes(t))
    throw new ApiError({ code: 'InvalidArgument', message: `tenure: unknown alarm type ${t}` });
  return t as AlarmType;
}

async function alarm(backend: KvBackend, req: unknown, call: CallInfo): Promise<object> {
  const m = asMessage(req);
  const action = enumField(m, 'action', 'GET');
  const type = alarmType(m);
  // etcd answers Alarm with no header at all (3.4.23: `"header":null`).
  if (action === 'GET') {
    await backend.readBarrier(call.signal);
    return { alarms: backend.machine.alarms(type).map(toProtoAlarm) };
  }
  if (action !== 'ACTIVATE' && action !== 'DEACTIVATE') return { alarms: [] };
  // Open to anyone in 3.4.23, which let any client stop every write with a CORRUPT alarm;
  // root only from 3.4.42 and 3.5.28 (GHSA-q8m4-xhhv-38mg), as here.
  if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
  const member = { memberId: BigInt.asUintN(64, bigintField(m, 'memberID')), alarm: type };
  const r = await backend.propose({ type: 'alarm', action, member }, call.signal);
  if (r.type === 'error') throw new ApiError(r.error);
  if (r.type !== 'alarm') throw new Error(`Alarm: unexpected result ${r.type}`);
  return { alarms: r.response.alarms.map(toProtoAlarm) };
}

/**
 * Maintenance.Snapshot as etcd streams it: chunks of the data with the bytes still to come,
 * then one more whose blob is the SHA-256 of all of them. The state is encoded once; each chunk
 * is a view of it, encoded into its message as it is sent, and the transport's backpressure
 * paces the loop, so a slow client holds the snapshot and a few chunks, not a second copy.
 */
async function streamSnapshot(
  backend: KvBackend,
  call: CallInfo,
  send: (resp: object) => Promise<void>,
): Promise<void> {
  if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
  const snap = backend.backupSnapshot();
  const header = encodeBackupHeader({
    payloadBytes: snap.data.length,
    revision: snap.revision,
    appliedIndex: snap.appliedIndex,
    createdAtMs: Date.now(),
  });
  let remaining = header.length + snap.data.length + backupPaddingBytes(snap.data.length);
  const digest = createHash('sha256');
  let first = true;
  for (const chunk of backupChunks(header, snap.data, SNAPSHOT_CHUNK_BYTES)) {
    if (call.signal.aborted) return;
    digest.update(chunk);
    remaining -= chunk.length;
    const resp = {
      ...(first ? { header: toProtoHeader(backend, snap.revision) } : {}),
      remaining_bytes: String(remaining),
      blob: Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
    };
    first = false;
    // Resolves once the transport can take more: the store waits here, not in memory twice.
    await send(resp);
  }
  if (call.signal.aborted) return;
  await send({ remaining_bytes: '0', blob: digest.digest() });
}

export function maintenanceHandlers(backend: KvBackend): ApiService {
  // etcd's maintenance headers carry the current store revision.
  const header = (): object => toProtoHeader(backend, backend.machine.revision);
  return {
    unary: {
      [`${MAINTENANCE}/Status`]: () => {
        const s = backend.status();
        // etcd lists "no leader" and every raised alarm here (maintenance.go, Status).
        const errors = [
          ...(s.leader === 0n ? ['etcdserver: no leader'] : []),
          ...backend.machine.alarms().map(alarmText),
        ];
        return Promise.resolve({
          header: header(),
          version: s.version,
          dbSize: String(s.dbSizeBytes),
          leader: s.leader.toString(),
          raftIndex: String(s.raftIndex),
          raftTerm: String(s.raftTerm),
          raftAppliedIndex: String(s.raftAppliedIndex),
          errors,
          dbSizeInUse: String(s.dbSizeBytes),
          isLearner: s.isLearner,
          storageVersion: '',
          dbSizeQuota: String(s.dbSizeQuotaBytes),
        });
      },
      [`${MAINTENANCE}/Alarm`]: (req, call) => alarm(backend, req, call),
      [`${MAINTENANCE}/Defragment`]: async (_req, call) => {
        if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
        return { header: header() };
      },
      [`${MAINTENANCE}/Hash`]: async (_req, call) => {
        if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
        return { header: header(), hash: backend.machine.digest() >>> 0 };
      },
      [`${MAINTENANCE}/HashKV`]: async (req, call) => {
        if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
        const a = await backend.hashKv(
          Math.max(0, numberField(asMessage(req), 'revision')),
          call.signal,
        );
        return {
          header: toProtoHeader(backend, a.revision),
          hash: a.hash,
          compact_revision: String(a.compactRevision),
        };
      },
      [`${MAINTENANCE}/MoveLeader`]: moveLeaderHandler(backend),
      [`${MAINTENANCE}/Downgrade`]: notOffered('Downgrade'),
    },
    serverStream: {
      [`${MAINTENANCE}/Snapshot`]: (_req, call, send) => streamSnapshot(backend, call, send),
    },
    bidi: {},
  };
}
