// The etcd key space's snapshot in binary: every key's history and every lease, with keys and
// values as they are. Tagged JSON spelled each byte as two hex digits, and the server wrapped
// that text in tagged JSON again, so a snapshot took four times the store and a store past
// about 16 MiB could not be written at all (a WAL record is at most 64 MiB, and a JavaScript
// string at most 2^29 characters). Here a snapshot is the store's size plus a few bytes per
// version, written in one pass into one buffer of exactly its size.
//
//   u8  SNAPSHOT_FORMAT
//   f64 applied index, f64 current revision, f64 compact revision
//   u32 keys; per key: bytes key, u32 versions; per version:
//       f64 rev, u32 sub, u8 present; if present: f64 create revision, f64 mod revision,
//       f64 version, i64 lease, bytes value
//   u32 leases; per lease: i64 id, f64 ttl s, f64 expiry ms, u8 has checkpoint [f64 checkpoint s],
//       u32 keys; per key: bytes key
//   then, only when the auth store holds anything: u8 1, bytes auth store (tagged JSON; small)
//   then, only while an alarm is raised: u8 2, bytes the alarms (tagged JSON; small)
import { ByteReader, ByteWriter } from '../base/bytes.js';
import { revision } from '../base/units.js';
import type { AlarmMember } from './alarms.js';
import { isAlarmMember } from './alarms.js';
import type { AuthData } from './auth-store.js';
import { fromByteKey, toByteKey, type ByteKey } from './key-range.js';
import { arrayOf, fields, isBool, isInt, isPermission, isString, orNull } from './shapes.js';
import { decodeTagged, encodeTagged } from './tagged-json.js';
import type { LeaseData } from './lease-table.js';
import type { KeyVersion, MvccData } from './mvcc.js';

export const SNAPSHOT_FORMAT = 2;

export interface SnapshotData {
  readonly appliedIndex: number;
  readonly mvcc: MvccData;
  readonly leases: readonly LeaseData[];
  /** Absent while auth was never used. */
  readonly auth?: AuthData;
  /** Absent while no alarm is raised. */
  readonly alarms?: readonly AlarmMember[];
}

/** The tags of the optional sections after the leases, in the order they are written. */
const SECTION_AUTH = 1;
const SECTION_ALARMS = 2;

/**
 * The encoded size of `s`, exactly: the writer is sized once, so a snapshot of hundreds of MiB is
 * neither grown by doubling nor copied to trim it.
 */
function encodedBytes(s: SnapshotData, auth: Uint8Array | null, alarms: Uint8Array | null): number {
  let n = 1 + 8 * 3 + 4;
  for (const [key, versions] of s.mvcc.keys) {
    n += 4 + key.length + 4;
    for (const v of versions) n += 8 + 4 + 1 + (v.kv === null ? 0 : 8 * 4 + 4 + v.kv.value.length);
  }
  n += 4;
  for (const l of s.leases) {
    n += 8 * 3 + 1 + (l.checkpointSeconds === null ? 0 : 8) + 4;
    for (const k of l.keys) n += 4 + k.length;
  }
  if (auth !== null) n += 1 + 4 + auth.length;
  return alarms === null ? n : n + 1 + 4 + alarms.length;
}

export function encodeSnapshotData(s: SnapshotData): Uint8Array {
  const auth = s.auth === undefined ? null : encodeTagged(s.auth);
  const alarms = s.alarms === undefined ? null : encodeTagged(s.alarms);
  const w = new ByteWriter(encodedBytes(s, auth, alarms));
  w.u8(SNAPSHOT_FORMAT);
  w.f64(s.appliedIndex);
  w.f64(s.mvcc.currentRevision);
  w.f64(s.mvcc.compactRevision);
  w.u32(s.mvcc.keys.length);
  for (const [key, versions] of s.mvcc.keys) {
    w.bytes(fromByteKey(key));
    w.u32(versions.length);
    for (const v of versions) {
      w.f64(v.rev);
      w.u32(v.sub);
      if (v.kv === null) {
        w.u8(0);
        continue;
      }
      w.u8(1);
      w.f64(v.kv.createRevision);
      w.f64(v.kv.modRevision);
      w.f64(v.kv.version);
      w.i64(v.kv.lease);
      w.bytes(v.kv.value);
    }
  }
  w.u32(s.leases.length);
  for (const l of s.leases) {
    w.i64(l.id);
    w.f64(l.ttlSeconds);
    w.f64(l.expiryMs);
    if (l.checkpointSeconds === null) w.u8(0);
    else {
      w.u8(1);
      w.f64(l.checkpointSeconds);
    }
    w.u32(l.keys.length);
    for (const k of l.keys) w.bytes(fromByteKey(k));
  }
  if (auth !== null) {
    w.u8(SECTION_AUTH);
    w.bytes(auth);
  }
  if (alarms !== null) {
    w.u8(SECTION_ALARMS);
    w.bytes(alarms);
  }
  return w.done();
}

/**
 * A snapshot that is not what encodeSnapshotData writes: cut short, a field out of its range, a
 * section of the wrong shape. The file's checksum already catches a damaged disk; this is what
 * a snapshot written wrong (a bug, another version, a hostile sender) gives instead of a
 * RangeError or TypeError halfway through a restore.
 */
export class SnapshotDecodeError extends Error {
  override readonly name = 'SnapshotDecodeError';
  readonly code = 'BAD_SNAPSHOT';
}

function check(ok: boolean, what: () => string): void {
  if (!ok) throw new SnapshotDecodeError(`etcd snapshot: ${what()}`);
}

const isRevision = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

function checkVersion(v: KeyVersion, currentRevision: number): void {
  check(isRevision(v.rev) && v.rev <= currentRevision, () => `revision ${v.rev} out of range`);
  check(Number.isSafeInteger(v.sub) && v.sub >= 0, () => `sub-revision ${v.sub}`);
  if (v.kv === null) return;
  const { createRevision, modRevision, version } = v.kv;
  check(
    isRevision(createRevision) && createRevision <= modRevision && modRevision === v.rev,
    () => `key revisions ${createRevision}/${modRevision} at ${v.rev}`,
  );
  check(Number.isSafeInteger(version) && version >= 1, () => `key version ${version}`);
}

function checkLease(l: LeaseData): void {
  check(l.id > 0n, () => `lease id ${l.id}`);
  check(Number.isFinite(l.ttlSeconds) && l.ttlSeconds >= 0, () => `lease TTL ${l.ttlSeconds}`);
  check(Number.isFinite(l.expiryMs), () => `lease expiry ${l.expiryMs}`);
  check(
    l.checkpointSeconds === null || Number.isFinite(l.checkpointSeconds),
    () => `lease checkpoint ${l.checkpointSeconds}`,
  );
}

const isUser = (u: unknown): boolean =>
  fields(u, { name: isString, passwordHash: orNull(isString), roles: arrayOf(isString) });
const isRole = (r: unknown): boolean => fields(r, { name: isString, perms: arrayOf(isPermission) });

/** The auth section's shape: what AuthStore.fromData reads. */
function isAuthData(v: unknown): v is AuthData {
  return fields(v, {
    enabled: isBool,
    revision: (x) => isInt(x) && x >= 0,
    users: arrayOf(isUser),
    roles: arrayOf(isRole),
  });
}

/** Decode a snapshot; SnapshotDecodeError for anything encodeSnapshotData would not write. */
export function decodeSnapshotData(data: Uint8Array): SnapshotData {
  try {
    return decodeChecked(data);
  } catch (e) {
    if (e instanceof SnapshotDecodeError) throw e;
    throw new SnapshotDecodeError(`etcd snapshot: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function decodeChecked(data: Uint8Array): SnapshotData {
  const r = new ByteReader(data);
  const format = r.u8();
  check(format === SNAPSHOT_FORMAT, () => `unknown format ${format}`);
  const appliedIndex = r.f64();
  const currentRevision = r.f64();
  const compactRevision = r.f64();
  check(
    isRevision(appliedIndex) && isRevision(compactRevision) && compactRevision <= currentRevision,
    () => `applied ${appliedIndex}, revisions ${compactRevision}..${currentRevision}`,
  );
  const keys: (readonly [ByteKey, readonly KeyVersion[]])[] = [];
  for (let i = r.u32(); i > 0; i--) {
    const keyBytes = r.bytes();
    const key = toByteKey(keyBytes);
    const versions: KeyVersion[] = [];
    for (let j = r.u32(); j > 0; j--) {
      const rev = r.f64();
      const sub = r.u32();
      if (r.u8() === 0) {
        versions.push({ rev, sub, kv: null });
        continue;
      }
      const createRevision = revision(r.f64());
      const modRevision = revision(r.f64());
      const version = r.f64();
      const lease = r.i64();
      const value = r.bytes();
      versions.push({
        rev,
        sub,
        kv: { key: keyBytes, createRevision, modRevision, version, value, lease },
      });
    }
    check(versions.length > 0, () => 'a key without history');
    for (const [j, v] of versions.entries()) {
      checkVersion(v, currentRevision);
      const before = versions[j - 1];
      check(
        before === undefined || before.rev < v.rev || (before.rev === v.rev && before.sub < v.sub),
        () => 'a key history out of order',
      );
    }
    const last = keys[keys.length - 1];
    check(last === undefined || last[0] < key, () => 'keys out of order');
    keys.push([key, versions]);
  }
  const leases: LeaseData[] = [];
  for (let i = r.u32(); i > 0; i--) {
    const id = r.i64();
    const ttlSeconds = r.f64();
    const expiryMs = r.f64();
    const checkpointSeconds = r.u8() === 0 ? null : r.f64();
    const leaseKeys: ByteKey[] = [];
    for (let j = r.u32(); j > 0; j--) leaseKeys.push(toByteKey(r.bytes()));
    const lease = { id, ttlSeconds, expiryMs, checkpointSeconds, keys: leaseKeys };
    checkLease(lease);
    leases.push(lease);
  }
  let auth: AuthData | undefined;
  let alarms: AlarmMember[] | undefined;
  let last = 0;
  while (r.pos < data.length) {
    const tag = r.u8();
    check(tag > last && (tag === SECTION_AUTH || tag === SECTION_ALARMS), () => 'unknown section');
    last = tag;
    const section: unknown = decodeTagged(r.bytes());
    if (tag === SECTION_AUTH) {
      check(isAuthData(section), () => 'auth section of the wrong shape');
      auth = section as AuthData;
    } else {
      check(
        Array.isArray(section) && section.every(isAlarmMember),
        () => 'alarm section of the wrong shape',
      );
      alarms = section as AlarmMember[];
    }
  }
  const mvcc = { currentRevision, compactRevision, keys };
  return {
    appliedIndex,
    mvcc,
    leases,
    ...(auth === undefined ? {} : { auth }),
    ...(alarms === undefined ? {} : { alarms }),
  };
}
