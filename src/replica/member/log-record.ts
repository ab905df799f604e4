// The one layout of every entry a member writes to the Raft log (the leader's no-op, the empty
// entry, aside):
//
//   u8 format   the layout's version, 1 today (LOG_FORMAT_MAX)
//   u8 kind     RECORD_ETCD: a key-space command, encoded by core/state/command.ts (a put in its
//               binary form, any other command as tagged JSON)
//               RECORD_MEMBER: a member-table command, tagged JSON
//   body        the rest
//
// The format byte is there so that a member never guesses at an entry it cannot read: a record
// of a format it does not know stops it (LogFormatError) before it applies anything past it,
// instead of diverging from members that can. Which format the leader writes is the cluster's
// decision, made the way etcd decides its cluster version (etcdserver/api/membership and
// version.go: the lowest version any member runs): each member publishes the newest format it
// reads in its member record, and the leader writes the oldest of those, so a format only
// changes once every member has been upgraded to read it.
import { assert } from '../../core/base/assert.js';
import type { LogIndex } from '../../core/base/units.js';

/** The newest record format this member reads (every one from 1 up to it) and may write. */
export const LOG_FORMAT_MAX = 1;

export const RECORD_ETCD = 1;
export const RECORD_MEMBER = 2;
export type RecordKind = typeof RECORD_ETCD | typeof RECORD_MEMBER;

const HEADER_BYTES = 2;

/**
 * A log entry in a record format this member does not read, or of a kind its format does not
 * have: it must stop, not apply it.
 */
export class LogFormatError extends Error {
  override readonly name = 'LogFormatError';
  constructor(
    readonly index: LogIndex,
    readonly format: number,
    readonly kind?: number,
  ) {
    super(
      kind === undefined
        ? `log entry ${index} is in record format ${format}, and this member reads formats 1 ` +
            `to ${LOG_FORMAT_MAX}: upgrade it to the version the other members run`
        : `log entry ${index} is a record of kind ${kind}, which format ${format} does not ` +
            'have: a member wrote it wrong, and applying it by guesswork would diverge',
    );
  }
}

export function encodeRecord(kind: RecordKind, body: Uint8Array, format: number): Uint8Array {
  assert(format >= 1 && format <= LOG_FORMAT_MAX, () => `cannot write record format ${format}`);
  const out = new Uint8Array(body.length + HEADER_BYTES);
  out[0] = format;
  out[1] = kind;
  out.set(body, HEADER_BYTES);
  return out;
}

export interface LogRecord {
  readonly kind: number;
  readonly body: Uint8Array;
}

/**
 * The record in a non-empty entry, or null if it is too short to be one. Throws LogFormatError
 * for a format this member does not read; the kind is for the caller to judge.
 */
export function readRecord(index: LogIndex, data: Uint8Array): LogRecord | null {
  if (data.length < HEADER_BYTES) return null;
  const format = data[0] as number;
  if (format < 1 || format > LOG_FORMAT_MAX) throw new LogFormatError(index, format);
  return { kind: data[1] as number, body: data.subarray(HEADER_BYTES) };
}

/**
 * The format the cluster writes: the oldest of the newest formats its members published (a
 * member that has not published one yet counts as reading format 1 only), and never newer than
 * this member writes.
 */
export function clusterLogFormat(published: Iterable<number | undefined>): number {
  let format = LOG_FORMAT_MAX;
  for (const max of published) format = Math.min(format, max ?? 1);
  return format;
}
