// The state a tenure node replicates: the etcd key space plus the member table (names, peer and
// client URLs), which etcd also keeps in its Raft log so that every member learns how to reach a
// new one and what to show in MemberList. Each entry is a record (log-record.ts) whose kind says
// which of the two it is for.
import { assert } from '../../core/base/assert.js';
import { ByteReader, ByteWriter } from '../../core/base/bytes.js';
import { FNV_OFFSET, fnvString } from '../../core/base/hash.js';
import { logIndex, type LogIndex } from '../../core/base/units.js';
import type { EtcdResult } from '../../core/state/etcd-machine.js';
import { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { StateMachine } from '../../core/state/machine.js';
import { decodeTagged, encodeTagged } from '../../core/state/tagged-json.js';
import { arrayOf, fields, isInt, isObject, isString, opt } from '../../core/state/shapes.js';
import { SnapshotDecodeError } from '../../core/state/snapshot-codec.js';
import type { Command } from '../../core/state/command.js';
import { decodeCommand, encodeCommand } from '../../core/state/command.js';
import {
  clusterLogFormat,
  encodeRecord,
  LogFormatError,
  readRecord,
  RECORD_ETCD,
  RECORD_MEMBER,
  type LogRecord,
} from './log-record.js';

/** What the member table holds of one member; IDs are the Raft node IDs as decimal strings. */
export interface MemberRecord {
  readonly id: string;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  /** The newest log record format the member reads (log-record.ts); absent until it publishes. */
  readonly logFormatMax?: number;
}

export type MemberCommand =
  | { readonly type: 'memberSet'; readonly member: MemberRecord }
  | { readonly type: 'memberDelete'; readonly id: string };

export type ServerResult = EtcdResult | { readonly type: 'member' };

/** Whether a decoded member record has its fields' types (a forwarded one may not). */
export function isMemberRecord(v: unknown): v is MemberRecord {
  return fields(v, {
    id: isString,
    name: isString,
    peerUrls: arrayOf(isString),
    clientUrls: arrayOf(isString),
    logFormatMax: opt(isInt),
  });
}

/**
 * Whether a decoded value is a MemberCommand. Checked where one arrives from a peer
 * (forward-frame.ts) and again in apply, so that a malformed one can never make every member
 * throw on the same entry.
 */
export function isMemberCommand(v: unknown): v is MemberCommand {
  if (!isObject(v)) return false;
  if (v.type === 'memberSet') return isMemberRecord(v.member);
  return v.type === 'memberDelete' && isString(v.id);
}

/** A key-space command as a log entry, in record format `format`. */
export function encodeEtcdEntry(cmd: Command, format: number): Uint8Array {
  return encodeRecord(RECORD_ETCD, encodeCommand(cmd), format);
}

/** A member-table command as a log entry, in record format `format`. */
export function encodeMemberEntry(cmd: MemberCommand, format: number): Uint8Array {
  return encodeRecord(RECORD_MEMBER, encodeTagged(cmd), format);
}

/** The etcd command of a log entry, or null for the no-op, a member command or damage. */
export function decodeEtcdEntry(data: Uint8Array): Command | null {
  const rec = data.length === 0 ? null : readRecordOrNull(data);
  return rec?.kind === RECORD_ETCD ? decodeCommand(rec.body) : null;
}

/**
 * Whether a log entry is one this machine's encoders write: the leader's no-op, a member command,
 * or an etcd command that decodes. Only the leader's own encoder writes entries, so anything else
 * is damage below the state machine (the simulator asserts it on every apply).
 */
export function wellFormedEntry(data: Uint8Array): boolean {
  if (data.length === 0) return true;
  const rec = readRecordOrNull(data);
  if (rec?.kind === RECORD_MEMBER) return true;
  return rec?.kind === RECORD_ETCD && decodeCommand(rec.body) !== null;
}

/** The member command of a log entry, or null for any other entry (or a malformed one). */
export function decodeMemberEntry(data: Uint8Array): MemberCommand | null {
  const rec = data.length === 0 ? null : readRecordOrNull(data);
  return rec?.kind === RECORD_MEMBER ? decodeMemberCommand(rec.body) : null;
}

/** A member command's tagged JSON, or null when it does not parse or has the wrong shape. */
export function decodeMemberCommand(body: Uint8Array): MemberCommand | null {
  let v: unknown;
  try {
    v = decodeTagged(body);
  } catch {
    return null;
  }
  return isMemberCommand(v) ? v : null;
}

function readRecordOrNull(data: Uint8Array): LogRecord | null {
  try {
    return readRecord(logIndex(0), data);
  } catch (e) {
    if (e instanceof LogFormatError) return null;
    throw e;
  }
}

/**
 * A server snapshot: u8 SERVER_SNAPSHOT_FORMAT, the member table as tagged JSON behind its
 * length, then the key space's binary snapshot (core/state/snapshot-codec.ts) to the end, so the
 * store's bytes are copied once and never spelled as text.
 */
const SERVER_SNAPSHOT_FORMAT = 2;
/** Bytes of a snapshot's header besides the member table. */
const SERVER_SNAPSHOT_HEADER_BYTES = 5;

/** A server snapshot of this member table and key-space snapshot (EtcdMachine.snapshot). */
export function encodeServerSnapshot(
  members: readonly MemberRecord[],
  etcd: Uint8Array,
): Uint8Array {
  const table = encodeTagged(members);
  const w = new ByteWriter(SERVER_SNAPSHOT_HEADER_BYTES + table.length + etcd.length);
  w.u8(SERVER_SNAPSHOT_FORMAT);
  w.bytes(table);
  w.raw(etcd);
  return w.done();
}

/**
 * A server snapshot's member table, and its key-space part as a view (not a copy); throws
 * SnapshotDecodeError when the layout or the table is wrong (the key space is not decoded).
 */
export function splitServerSnapshot(data: Uint8Array): {
  readonly members: MemberRecord[];
  readonly etcd: Uint8Array;
} {
  try {
    const r = new ByteReader(data);
    const format = r.u8();
    if (format !== SERVER_SNAPSHOT_FORMAT)
      throw new SnapshotDecodeError(`server snapshot: unknown format ${format}`);
    const decoded: unknown = decodeTagged(r.bytes());
    if (!Array.isArray(decoded) || !decoded.every(isMemberRecord))
      throw new SnapshotDecodeError('server snapshot: a member table of the wrong shape');
    return { members: decoded, etcd: r.rest() };
  } catch (e) {
    if (e instanceof SnapshotDecodeError) throw e;
    throw new SnapshotDecodeError(`server snapshot: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export class ServerMachine implements StateMachine<ServerResult> {
  readonly etcd: EtcdMachine;
  private members = new Map<string, MemberRecord>();
  /** Told of every change to the member table (the node updates its peer transport). */
  onMembersChanged: (() => void) | undefined;
  /** Told of an entry this member cannot read, before apply throws (the member stops). */
  onUnreadable: ((e: LogFormatError) => void) | undefined;

  constructor(etcd: EtcdMachine = new EtcdMachine()) {
    this.etcd = etcd;
  }

  /**
   * Apply one entry. A record in a format this member does not read throws LogFormatError, after
   * telling `onUnreadable`: applying it by guesswork would diverge from members that can read it.
   */
  apply(index: LogIndex, data: Uint8Array): ServerResult {
    if (data.length === 0) return this.etcd.apply(index, data);
    let rec: LogRecord | null;
    try {
      rec = readRecord(index, data);
    } catch (e) {
      if (e instanceof LogFormatError) this.onUnreadable?.(e);
      throw e;
    }
    assert(rec !== null, () => `server machine: entry ${index} is too short for a record`);
    if (rec.kind === RECORD_MEMBER) {
      // Keep the etcd machine's applied index (its consistent index) in step.
      this.etcd.apply(index, new Uint8Array(0));
      const cmd = decodeMemberCommand(rec.body);
      // A malformed member command changes nothing, on every member alike.
      if (cmd === null) return { type: 'member' };
      if (cmd.type === 'memberSet') this.members.set(cmd.member.id, cmd.member);
      else this.members.delete(cmd.id);
      this.onMembersChanged?.();
      return { type: 'member' };
    }
    if (rec.kind !== RECORD_ETCD) {
      const e = new LogFormatError(index, data[0] as number, rec.kind);
      this.onUnreadable?.(e);
      throw e;
    }
    return this.etcd.apply(index, rec.body);
  }

  memberTable(): ReadonlyMap<string, MemberRecord> {
    return this.members;
  }

  /**
   * The record format the cluster writes (log-record.ts): the oldest of the newest formats the
   * members of `ids` published; one with no record yet counts as reading format 1 only.
   */
  writeFormat(ids: readonly number[]): number {
    return clusterLogFormat(ids.map((id) => this.members.get(String(id))?.logFormatMax));
  }

  snapshot(): Uint8Array {
    return encodeServerSnapshot([...this.members.values()], this.etcd.snapshot());
  }

  /** Restore from a snapshot; SnapshotDecodeError, and nothing changed, when it is malformed. */
  restore(data: Uint8Array): void {
    const { members, etcd } = splitServerSnapshot(data);
    this.etcd.restore(etcd);
    this.members = new Map(members.map((m) => [m.id, m]));
    this.onMembersChanged?.();
  }

  digest(): number {
    let h = this.etcd.digest();
    for (const m of [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : 1)))
      h = fnvString(h, JSON.stringify(m));
    return h === 0 ? FNV_OFFSET : h;
  }
}
