// The write-ahead log's record format and recovery. A record is framed as
// [payload length u32][crc32 of payload u32][payload], so a reader can tell a complete record from
// a torn or corrupted one. Recovery truncates a torn tail (the crash interrupted the last,
// unsynced write) and refuses to start on corruption anywhere before it: silently dropping
// committed entries would let this node vote as if it never had them (PAR, FAST'18).
import { assert } from '../core/base/assert.js';
import type { Mutants } from '../core/base/mutants.js';
import { logIndex, nodeId, term, type LogIndex, type Term } from '../core/base/units.js';
import type { ConfState, Entry, HardState, Snapshot } from '../core/raft/types.js';
import { ByteReader, ByteWriter, TruncatedBytesError } from '../core/base/bytes.js';
import { crc32 } from './crc32.js';

export const WAL_FILE = 'wal';
export const SNAP_FILE = 'snap';
/** A record larger than this is corruption, not data (etcd's "max entry size" check). */
export const WAL_RECORD_BYTES_MAX = 64 * 1024 * 1024;
/** Entry bytes one record holds at most before the next record starts (one entry may pass it). */
const ENTRIES_RECORD_BYTES = 16 * 1024 * 1024;
/** Where an entries record keeps its count: after the record type. */
const ENTRIES_COUNT_AT = 1;
const HEADER_BYTES = 8;

/** Record kinds, the first byte of each payload. */
const RecordType = { Entries: 1, HardState: 2, SnapshotMarker: 3 } as const;

export class CorruptWalError extends Error {
  override readonly name = 'CorruptWalError';
  readonly code = 'WAL_CORRUPT';
}

// ------------------------------------------------------------------ encoding

function frame(payload: Uint8Array): Uint8Array {
  assert(payload.length <= WAL_RECORD_BYTES_MAX, 'WAL record too large');
  const out = new Uint8Array(HEADER_BYTES + payload.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, payload.length, true);
  v.setUint32(4, crc32(payload), true);
  out.set(payload, HEADER_BYTES);
  return out;
}

/**
 * Entries as WAL records, as many as it takes to keep each under ENTRIES_RECORD_BYTES: a batch
 * of large proposals (up to 4 MiB each) may together pass WAL_RECORD_BYTES_MAX.
 */
export function encodeEntries(entries: readonly Entry[]): Uint8Array {
  const frames: Uint8Array[] = [];
  const start = (): ByteWriter => {
    const w = new ByteWriter();
    w.u8(RecordType.Entries);
    w.u32(0); // the count, set when the record is done
    return w;
  };
  let w = start();
  let count = 0;
  const flush = (): void => {
    w.setU32(ENTRIES_COUNT_AT, count);
    frames.push(frame(w.done()));
  };
  for (const e of entries) {
    if (count > 0 && w.len + e.data.length > ENTRIES_RECORD_BYTES) {
      flush();
      w = start();
      count = 0;
    }
    w.f64(e.index);
    w.f64(e.term);
    w.u8(e.type === 'conf' ? 1 : 0);
    w.bytes(e.data);
    count++;
  }
  flush();
  if (frames.length === 1) return frames[0] as Uint8Array;
  const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  return out;
}

export function encodeHardState(hs: HardState): Uint8Array {
  const w = new ByteWriter();
  w.u8(RecordType.HardState);
  w.f64(hs.term);
  w.f64(hs.vote);
  w.f64(hs.commit);
  return frame(w.done());
}

export function encodeSnapshotMarker(index: LogIndex, t: Term): Uint8Array {
  const w = new ByteWriter();
  w.u8(RecordType.SnapshotMarker);
  w.f64(index);
  w.f64(t);
  return frame(w.done());
}

function encodeConf(w: ByteWriter, c: ConfState): void {
  w.u32(c.voters.length);
  for (const v of c.voters) w.f64(v);
  w.u32(c.learners.length);
  for (const l of c.learners) w.f64(l);
}

/**
 * The snapshot file: a framed header (index, term, configuration, and the data's length and
 * CRC) followed by the data as it is. The data is not framed as a WAL record: a snapshot is the
 * whole store and may be far larger than WAL_RECORD_BYTES_MAX.
 */
export function encodeSnapshot(s: Snapshot): Uint8Array {
  const w = new ByteWriter();
  w.f64(s.index);
  w.f64(s.term);
  encodeConf(w, s.conf);
  w.f64(s.data.length);
  w.u32(crc32(s.data));
  const header = frame(w.done());
  const out = new Uint8Array(header.length + s.data.length);
  out.set(header, 0);
  out.set(s.data, header.length);
  return out;
}

export function decodeSnapshot(bytes: Uint8Array): Snapshot {
  const corrupt = (why: string): CorruptWalError =>
    new CorruptWalError(`snapshot file is corrupt: ${why}`);
  if (bytes.length < HEADER_BYTES) throw corrupt('shorter than its header');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(0, true);
  const headerEnd = HEADER_BYTES + len;
  if (len === 0 || headerEnd > bytes.length) throw corrupt('header length');
  if (crc32(bytes, HEADER_BYTES, headerEnd) !== view.getUint32(4, true))
    throw corrupt('header checksum');
  return readOrCorrupt(() => {
    const r = new ByteReader(bytes.subarray(HEADER_BYTES, headerEnd));
    const index = logIndex(whole(r, 'snapshot index', 0));
    const t = term(whole(r, 'snapshot term', 0));
    const voters = Array.from({ length: r.u32() }, () => nodeId(whole(r, 'voter', 1)));
    const learners = Array.from({ length: r.u32() }, () => nodeId(whole(r, 'learner', 1)));
    const dataBytes = r.f64();
    const dataCrc = r.u32();
    if (headerEnd + dataBytes !== bytes.length) throw corrupt('data length');
    const data = bytes.subarray(headerEnd);
    if (crc32(data) !== dataCrc) throw corrupt('data checksum');
    return { index, term: t, conf: { voters, learners }, data };
  });
}

// ------------------------------------------------------------------ recovery

interface Scan {
  status: 'ok' | 'torn';
  payloads: Uint8Array[];
  /** Bytes of valid records; the file should be truncated here when the tail is torn. */
  validBytes: number;
}

/** CRC work spent at most looking for a frame after a damaged record, in bytes. */
const TAIL_SCAN_BYTES_MAX = 64 * 1024 * 1024;

/**
 * Does a well-formed record start anywhere after `from`? A torn write damages only the end of the
 * log, so nothing valid can follow it; a valid record after damage means the damage is corruption
 * in the middle. (A flipped bit in a length field would otherwise read as a record running past
 * the end of the file, and the log would be silently cut there.) Past the scan budget the answer
 * is "yes": refusing to start is the safe side.
 */
function validFrameAfter(bytes: Uint8Array, view: DataView, from: number): boolean {
  let work = 0;
  for (let q = from + 1; q + HEADER_BYTES < bytes.length; q++) {
    const len = view.getUint32(q, true);
    if (len === 0 || q + HEADER_BYTES + len > bytes.length) continue;
    work += len;
    if (work > TAIL_SCAN_BYTES_MAX) return true;
    if (crc32(bytes, q + HEADER_BYTES, q + HEADER_BYTES + len) === view.getUint32(q + 4, true)) {
      return true;
    }
  }
  return false;
}

function allZero(bytes: Uint8Array, from: number): boolean {
  for (let i = from; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/**
 * Read framed records. A damaged record (short, oversized, empty or failing its checksum) is a
 * torn tail when no valid record follows it: the crash interrupted the last writes. Otherwise it
 * is corruption and recovery refuses to start. `acceptTorn` is the planted "torn tail treated as
 * valid" bug: it decodes a damaged last record as if it were whole.
 */
function scanRecords(bytes: Uint8Array, acceptTorn: boolean): Scan {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloads: Uint8Array[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const len = pos + HEADER_BYTES <= bytes.length ? view.getUint32(pos, true) : 0;
    const end = pos + HEADER_BYTES + len;
    const fits =
      pos + HEADER_BYTES <= bytes.length &&
      len > 0 &&
      len <= WAL_RECORD_BYTES_MAX &&
      end <= bytes.length;
    const intact = fits && crc32(bytes, pos + HEADER_BYTES, end) === view.getUint32(pos + 4, true);
    if (!intact) {
      // Zeros to the end are space the disk preallocated (file-disk.ts), not a damaged record.
      if (allZero(bytes, pos)) return { status: 'ok', payloads, validBytes: pos };
      if (validFrameAfter(bytes, view, pos)) {
        throw new CorruptWalError(
          `WAL record at byte ${pos} is damaged but valid records follow it`,
        );
      }
      if (!(acceptTorn && fits)) return { status: 'torn', payloads, validBytes: pos };
    }
    payloads.push(bytes.subarray(pos + HEADER_BYTES, end));
    pos = end;
  }
  return { status: 'ok', payloads, validBytes: pos };
}

export interface Recovered {
  readonly hardState: HardState | undefined;
  readonly snapshot: Snapshot | undefined;
  readonly entries: Entry[];
  /** The WAL bytes that are valid; a torn tail beyond them must be cut off before appending. */
  readonly walValidBytes: number;
  readonly tornTail: boolean;
}

function last(entries: readonly Entry[]): number {
  return entries[entries.length - 1]?.index ?? 0;
}

/**
 * A count the WAL stores as a float64 (an index, a term, a member ID): a whole number from `min`
 * up, or the record is corrupt. A checksum over a record a bug wrote wrong still matches, and a
 * term of 1.5 or NaN would reach Raft as if it were one.
 */
function whole(r: ByteReader, what: string, min: number): number {
  const v = r.f64();
  if (!Number.isSafeInteger(v) || v < min) throw new CorruptWalError(`${what} ${v} in the WAL`);
  return v;
}

/** A record whose checksum matched but whose payload ends early was written wrong: corruption. */
function readOrCorrupt<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof TruncatedBytesError)
      throw new CorruptWalError(`WAL record is malformed: ${e.message}`);
    throw e;
  }
}

/**
 * Rebuild what a node had durably: the snapshot file, then the WAL replayed in order, where a
 * later entry at an index replaces the earlier one and everything after it (a truncation that the
 * node logged), and a snapshot marker drops everything at or below it.
 */
export function recover(
  wal: Uint8Array | undefined,
  snapFile: Uint8Array | undefined,
  opts: { mutants: Mutants },
): Recovered {
  const snapshot = snapFile ? decodeSnapshot(snapFile) : undefined;
  let hardState: HardState | undefined;
  let entries: Entry[] = [];
  const scan = wal
    ? scanRecords(wal, opts.mutants.has('tornTailValid'))
    : { status: 'ok' as const, payloads: [], validBytes: 0 };
  let installIncomplete = false;
  for (const p of scan.payloads) {
    if (installIncomplete) break;
    readOrCorrupt(() => {
      const r = new ByteReader(p);
      const type = r.u8();
      if (type === RecordType.HardState) {
        hardState = {
          term: term(whole(r, 'term', 0)),
          vote: nodeId(whole(r, 'vote', 0)),
          commit: logIndex(whole(r, 'commit index', 0)),
        };
      } else if (type === RecordType.SnapshotMarker) {
        const index = r.f64();
        r.f64();
        // A marker newer than the snapshot file: the crash came after the marker was written
        // but before the file replace landed. The install never completed, so nothing from the
        // marker on was promised (its batch was not synced); the log before it stands.
        if (index > (snapshot?.index ?? 0)) installIncomplete = true;
        else entries = entries.filter((e) => e.index > index);
      } else if (type === RecordType.Entries) {
        const n = r.u32();
        for (let i = 0; i < n; i++) {
          const e: Entry = {
            index: logIndex(whole(r, 'entry index', 1)),
            term: term(whole(r, 'entry term', 0)),
            type: r.u8() === 1 ? 'conf' : 'normal',
            data: r.bytes(),
          };
          // A rewritten index truncates what followed it (the log was truncated on a conflict).
          const first = entries[0];
          if (opts.mutants.has('walReplayKeepsOverwritten') && first && e.index <= last(entries)) {
            // The planted bug: a rewritten index replaces only itself, the old tail after it stays.
            if (e.index >= first.index) entries[e.index - first.index] = e;
            continue;
          }
          if (first && e.index <= first.index) entries = [];
          else if (first) entries.length = Math.min(entries.length, e.index - first.index);
          entries.push(e);
        }
      } else {
        throw new CorruptWalError(`unknown WAL record type ${type}`);
      }
    });
  }
  // Keep only entries above the snapshot, and only if they continue it: entries logged before a
  // newer snapshot file landed may belong to a history the snapshot has replaced.
  const snapIndex = snapshot?.index ?? 0;
  // If the WAL holds the snapshot's own index, the entries after it continue the snapshot only
  // when that entry has the snapshot's term (Log Matching, Raft §5.3).
  const atSnap = snapshot ? entries.find((e) => e.index === snapIndex) : undefined;
  const continues = atSnap === undefined || atSnap.term === snapshot?.term;
  entries = continues ? entries.filter((e) => e.index > snapIndex) : [];
  if (snapshot && entries.length > 0) {
    const first = entries[0] as Entry;
    if (first.index !== snapIndex + 1 || first.term < snapshot.term) entries = [];
  }
  return {
    hardState,
    snapshot,
    entries,
    walValidBytes: scan.validBytes,
    tornTail: scan.status === 'torn',
  };
}

/**
 * Of appends that are each whole records (as the replica writes them), the lowest index of an
 * entry they hold, or undefined if they hold none: what a crash could still lose. For the
 * simulator's check that acknowledgements wait for the sync.
 */
export function unsyncedEntriesFrom(appends: readonly Uint8Array[]): number | undefined {
  let lowest: number | undefined;
  for (const a of appends) {
    const view = new DataView(a.buffer, a.byteOffset, a.byteLength);
    if (a.length < HEADER_BYTES + 13 || a[HEADER_BYTES] !== RecordType.Entries) continue;
    if (view.getUint32(HEADER_BYTES + 1, true) === 0) continue;
    const first = view.getFloat64(HEADER_BYTES + 5, true);
    if (lowest === undefined || first < lowest) lowest = first;
  }
  return lowest;
}
