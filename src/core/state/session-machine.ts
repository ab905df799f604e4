// Client sessions over any replicated state machine (Raft thesis §6.3): each client numbers its
// commands, and a command whose number its session has already applied returns the recorded
// result instead of applying again. A client that retries after a timeout or a lost leader may
// get the same command into the log twice; without this, a retried write could take effect twice.
//
// The wrapped machine (the etcd key space) knows nothing of sessions: an entry carries a session
// header in front of the machine's own command bytes, and a new command's bytes are passed on
// unchanged. The sessions table is replicated state: it is in the snapshot and in the digest.
import { assert } from '../base/assert.js';
import { fnvNumber } from '../base/hash.js';
import type { Mutants } from '../base/mutants.js';
import { NO_MUTANTS } from '../base/mutants.js';
import type { LogIndex } from '../base/units.js';
import type { StateMachine } from './machine.js';
import { decodeTagged, encodeTagged } from './tagged-json.js';

/** A command in the log: the wrapped machine's command plus the client session it belongs to. */
export interface SessionEntry {
  /** The client's session: a positive safe integer. */
  readonly session: number;
  /** The command's number within the session, from 1, increasing by one per new command. */
  readonly seq: number;
  /** The wrapped machine's encoded command, passed to it as is. */
  readonly command: Uint8Array;
}

/** The result of applying an entry: undefined for one without a session (the leader's no-op). */
export type SessionApplyResult<R> =
  { readonly session: number; readonly seq: number; readonly result: R } | undefined;

/** Sessions kept at most; the least recently used is evicted beyond this. */
export const SESSIONS_MAX = 4096;

/**
 * Bytes in front of the wrapped command: a format byte, then session and seq as float64s (exact
 * for every safe integer; a binary header so the command bytes need no re-encoding).
 */
export const SESSION_HEADER_BYTES = 17;

/** The format byte of a session entry; an entry of zero bytes is the leader's no-op. */
const ENTRY_FORMAT = 0x53; // 'S'

interface Session {
  readonly seq: number;
  readonly result: unknown;
}

export function encodeSessionEntry(e: SessionEntry): Uint8Array {
  assert(Number.isSafeInteger(e.session) && e.session > 0, 'session: bad session id');
  assert(Number.isSafeInteger(e.seq) && e.seq > 0, 'session: bad sequence number');
  const out = new Uint8Array(SESSION_HEADER_BYTES + e.command.length);
  const view = new DataView(out.buffer);
  out[0] = ENTRY_FORMAT;
  view.setFloat64(1, e.session);
  view.setFloat64(9, e.seq);
  out.set(e.command, SESSION_HEADER_BYTES);
  return out;
}

/** The session and seq of a session entry, without copying its command; undefined for a no-op. */
export function decodeSessionEntry(data: Uint8Array): SessionEntry | undefined {
  if (data.length === 0) return undefined;
  // Only the leader's own encoder writes entries: anything else in the log is a bug.
  assert(
    data.length >= SESSION_HEADER_BYTES && data[0] === ENTRY_FORMAT,
    'session: malformed entry',
  );
  const view = new DataView(data.buffer, data.byteOffset, SESSION_HEADER_BYTES);
  return {
    session: view.getFloat64(1),
    seq: view.getFloat64(9),
    command: data.subarray(SESSION_HEADER_BYTES),
  };
}

/**
 * Results are cached as they are, so `R` must be plain data that tagged JSON (tagged-json.ts)
 * round-trips: a duplicate answered after a restore gets the decoded copy.
 */
export class SessionMachine<R> implements StateMachine<SessionApplyResult<R>> {
  /** Insertion order is recency order: a session is re-inserted on every new command. */
  private sessions = new Map<number, Session>();

  constructor(
    /** The wrapped machine; queries (reads) go to it directly. */
    readonly inner: StateMachine<R>,
    private readonly mutants: Mutants = NO_MUTANTS,
  ) {}

  apply(index: LogIndex, data: Uint8Array): SessionApplyResult<R> {
    const entry = decodeSessionEntry(data);
    if (entry === undefined) {
      this.inner.apply(index, data); // the no-op: the inner machine records the index
      return undefined;
    }
    const { session, seq } = entry;
    const s = this.sessions.get(session);
    if (s && seq <= s.seq && !this.mutants.has('lostDuplicateDetection')) {
      // A retry of a command we already applied: answer it, do not apply it again. An older
      // sequence number is a retry the client has already given up on; it is dropped too.
      return { session, seq, result: s.result as R };
    }
    const result = this.inner.apply(index, entry.command);
    this.sessions.delete(session);
    this.sessions.set(session, { seq, result });
    if (this.sessions.size > SESSIONS_MAX) {
      const oldest = this.sessions.keys().next().value as number;
      this.sessions.delete(oldest);
    }
    return { session, seq, result };
  }

  /** The highest applied sequence number of `session`, or 0 when it has none (for tests). */
  lastSeq(session: number): number {
    return this.sessions.get(session)?.seq ?? 0;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** A 4-byte length of the sessions table, the table in tagged JSON, the inner snapshot. */
  snapshot(): Uint8Array {
    const table = encodeTagged([...this.sessions].map(([id, s]) => [id, s.seq, s.result]));
    const inner = this.inner.snapshot();
    const out = new Uint8Array(4 + table.length + inner.length);
    new DataView(out.buffer).setUint32(0, table.length);
    out.set(table, 4);
    out.set(inner, 4 + table.length);
    return out;
  }

  restore(data: Uint8Array): void {
    assert(data.length >= 4, 'session: truncated snapshot');
    const tableBytes = new DataView(data.buffer, data.byteOffset, 4).getUint32(0);
    assert(4 + tableBytes <= data.length, 'session: truncated snapshot');
    const table = decodeTagged(data.subarray(4, 4 + tableBytes)) as [number, number, unknown][];
    this.sessions = new Map(table.map(([id, seq, result]) => [id, { seq, result }]));
    this.inner.restore(data.subarray(4 + tableBytes));
  }

  /** The inner digest mixed with every session's id and last seq, in session order. */
  digest(): number {
    let h = this.inner.digest();
    h = fnvNumber(h, this.sessions.size);
    for (const id of [...this.sessions.keys()].sort((a, b) => a - b)) {
      h = fnvNumber(h, id);
      h = fnvNumber(h, this.sessions.get(id)?.seq ?? 0);
    }
    return h;
  }
}
