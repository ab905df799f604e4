// The file `etcdctl snapshot save` writes from a tenure member, and `tenure snapshot restore`
// and `tenure snapshot status` read. etcd streams its bbolt file and then the SHA-256 of what it
// sent (etcd server/etcdserver/api/v3rpc/maintenance.go, Snapshot). etcdctl 3.4.23 appends every
// blob to the file and refuses a file whose size is not 32 past a multiple of 512 ("sha256
// checksum not found [bytes: N]", clientv3/snapshot/v3_snapshot.go hasChecksum: a bbolt file is
// whole pages); it does not check the digest itself, `etcdctl snapshot restore` does.
// tenure streams its own state in the same envelope, padded to the same alignment:
//
//   64 bytes   header: the magic "TENURE-SNAPSHOT\n", u8 format, 7 zero bytes, then f64 payload
//              bytes, f64 revision, f64 applied index, f64 creation time (Unix ms), 8 zero bytes
//   payload    a server snapshot (replica/member/server-machine.ts): member table, key space,
//              leases, auth, alarms
//   padding    zeros, so that header + payload + padding is a multiple of 512 bytes
//   32 bytes   SHA-256 of everything before it
//
// The payload is what the member's own snapshot file would hold; it is not a bbolt file, and
// etcd's tools cannot read it (nor tenure's an etcd one: the magic tells them apart).
import { createHash } from 'node:crypto';

const MAGIC = Buffer.from('TENURE-SNAPSHOT\n', 'latin1');
export const BACKUP_FORMAT = 1;
export const BACKUP_HEADER_BYTES = 64;
/** The alignment etcdctl's hasChecksum wants of the data before the digest. */
export const BACKUP_ALIGN_BYTES = 512;
export const SHA256_BYTES = 32;
/** Bytes hashed between two progress reports while a file is verified. */
const VERIFY_STEP_BYTES = 64 * 1024 * 1024;

export interface BackupHeader {
  readonly format: number;
  readonly payloadBytes: number;
  /** The key space's revision in the payload. */
  readonly revision: number;
  /** The last log index applied to the payload on the member that sent it. */
  readonly appliedIndex: number;
  /** When the member encoded it, Unix ms (for people; nothing depends on it). */
  readonly createdAtMs: number;
}

/** A file that is not a whole, undamaged tenure snapshot. */
export class BackupFileError extends Error {
  override readonly name = 'BackupFileError';
  readonly code = 'BAD_BACKUP';
}

export function encodeBackupHeader(h: Omit<BackupHeader, 'format'>): Uint8Array {
  const out = Buffer.alloc(BACKUP_HEADER_BYTES);
  MAGIC.copy(out, 0);
  out.writeUInt8(BACKUP_FORMAT, MAGIC.length);
  out.writeDoubleLE(h.payloadBytes, 24);
  out.writeDoubleLE(h.revision, 32);
  out.writeDoubleLE(h.appliedIndex, 40);
  out.writeDoubleLE(h.createdAtMs, 48);
  return out;
}

/** Zero bytes after a payload of `payloadBytes`, to reach the alignment. */
export function backupPaddingBytes(payloadBytes: number): number {
  const used = (BACKUP_HEADER_BYTES + payloadBytes) % BACKUP_ALIGN_BYTES;
  return used === 0 ? 0 : BACKUP_ALIGN_BYTES - used;
}

const isWhole = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

function decodeHeader(file: Uint8Array): BackupHeader {
  const b = Buffer.from(file.buffer, file.byteOffset, BACKUP_HEADER_BYTES);
  if (!b.subarray(0, MAGIC.length).equals(MAGIC))
    throw new BackupFileError(
      'not a tenure snapshot (no TENURE-SNAPSHOT header): a snapshot saved from an etcd ' +
        'server is a bbolt file, for `etcdctl snapshot restore`',
    );
  const h: BackupHeader = {
    format: b.readUInt8(MAGIC.length),
    payloadBytes: b.readDoubleLE(24),
    revision: b.readDoubleLE(32),
    appliedIndex: b.readDoubleLE(40),
    createdAtMs: b.readDoubleLE(48),
  };
  if (h.format !== BACKUP_FORMAT)
    throw new BackupFileError(
      `tenure snapshot format ${h.format}; this tenure reads format ${BACKUP_FORMAT}`,
    );
  if (!isWhole(h.payloadBytes) || !isWhole(h.revision) || !isWhole(h.appliedIndex))
    throw new BackupFileError('the snapshot header is malformed');
  return h;
}

/**
 * Check a whole file: its length, header, SHA-256 trailer and padding. Returns the header and
 * the payload (a view into `file`, not a copy). `onProgress` hears the bytes hashed so far.
 */
export function verifyBackup(
  file: Uint8Array,
  onProgress?: (hashedBytes: number, totalBytes: number) => void,
): { readonly header: BackupHeader; readonly payload: Uint8Array } {
  const n = file.length;
  if (n < BACKUP_HEADER_BYTES + SHA256_BYTES)
    throw new BackupFileError(`${n} bytes: too short for a tenure snapshot`);
  const header = decodeHeader(file);
  if (n % BACKUP_ALIGN_BYTES !== SHA256_BYTES)
    throw new BackupFileError(
      `sha256 checksum not found [bytes: ${n}]: the file was cut short or is not a whole snapshot`,
    );
  const body = n - SHA256_BYTES;
  const hash = createHash('sha256');
  for (let at = 0; at < body; at += VERIFY_STEP_BYTES) {
    hash.update(file.subarray(at, Math.min(body, at + VERIFY_STEP_BYTES)));
    onProgress?.(Math.min(body, at + VERIFY_STEP_BYTES), body);
  }
  const expected = Buffer.from(file.buffer, file.byteOffset + body, SHA256_BYTES);
  const got = hash.digest();
  if (!got.equals(expected))
    throw new BackupFileError(
      `sha256 mismatch: the file says ${expected.toString('hex')}, its content hashes to ` +
        `${got.toString('hex')}; the file is damaged`,
    );
  const end = BACKUP_HEADER_BYTES + header.payloadBytes;
  if (end + backupPaddingBytes(header.payloadBytes) !== body)
    throw new BackupFileError(
      `the header gives a payload of ${header.payloadBytes} bytes; the file holds ` +
        `${body - BACKUP_HEADER_BYTES} with its padding`,
    );
  for (let i = end; i < body; i++)
    if (file[i] !== 0) throw new BackupFileError('the padding after the payload is not zeros');
  return { header, payload: file.subarray(BACKUP_HEADER_BYTES, end) };
}

/**
 * The bytes a member streams for a snapshot, in chunks of at most `chunkBytes`, without copying
 * the payload (a chunk that straddles two parts is the only copy): header, payload, padding.
 */
export function* backupChunks(
  header: Uint8Array,
  payload: Uint8Array,
  chunkBytes: number,
): Generator<Uint8Array> {
  const parts = [header, payload, new Uint8Array(backupPaddingBytes(payload.length))];
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  for (const part of parts) {
    let at = 0;
    while (at < part.length) {
      const take = Math.min(chunkBytes - pendingBytes, part.length - at);
      const piece = part.subarray(at, at + take);
      at += take;
      if (pendingBytes === 0 && take === chunkBytes) {
        yield piece;
        continue;
      }
      pending.push(piece);
      pendingBytes += take;
      if (pendingBytes === chunkBytes) {
        yield Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending);
}
