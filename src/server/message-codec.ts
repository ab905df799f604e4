// The peer wire format for Raft messages: compact little-endian binary, one message per frame
// payload. Data, not objects: the decoder builds the same plain values the core produced.
import { unreachable } from '../core/base/assert.js';
import { logIndex, nodeId, term, type NodeId } from '../core/base/units.js';
import {
  MESSAGE_TYPE_CODES,
  type ConfState,
  type Entry,
  type Message,
  type MessageType,
  type Snapshot,
} from '../core/raft/types.js';
import { ByteReader, ByteWriter } from '../core/base/bytes.js';

const TYPES = new Map<number, MessageType>(
  Object.entries(MESSAGE_TYPE_CODES).map(([k, v]) => [v, k as MessageType]),
);

export class MessageDecodeError extends Error {
  override readonly name = 'MessageDecodeError';
  readonly code = 'BAD_PEER_MESSAGE';
}

/**
 * The reads of a decoder that takes nothing on trust: every number is checked for what the core
 * assumes of it (a NaN term or a fractional index would reach its assertions), every count
 * against the bytes left before anything is built for it, every boolean is 0 or 1.
 */
class Fields {
  constructor(readonly r: ByteReader) {}

  /** A term, an index or a count: a non-negative integer a double holds exactly. */
  count(what: string): number {
    const v = this.r.f64();
    if (!Number.isSafeInteger(v) || v < 0)
      throw new MessageDecodeError(`${what} ${v} is not a non-negative integer`);
    return v;
  }

  /** A member ID: a positive integer (0 is NONE, "no node"). */
  id(what: string): NodeId {
    const v = this.r.f64();
    if (!Number.isSafeInteger(v) || v <= 0)
      throw new MessageDecodeError(`${what} ${v} is not a member ID`);
    return nodeId(v);
  }

  /** A read context: any finite number the requester chose. */
  context(): number {
    const v = this.r.f64();
    if (!Number.isFinite(v)) throw new MessageDecodeError(`read context ${v} is not finite`);
    return v;
  }

  bool(what: string): boolean {
    const b = this.r.u8();
    if (b > 1) throw new MessageDecodeError(`${what} byte ${b} is not 0 or 1`);
    return b === 1;
  }

  /** A u32 count of items of at least `itemBytes` each, refused if the rest cannot hold them. */
  items(what: string, itemBytes: number): number {
    const n = this.r.u32();
    const left = this.r.left;
    if (n * itemBytes > left)
      throw new MessageDecodeError(`${n} ${what} cannot fit in the ${left} bytes left`);
    return n;
  }
}

function writeConf(w: ByteWriter, c: ConfState): void {
  w.u32(c.voters.length);
  for (const v of c.voters) w.f64(v);
  w.u32(c.learners.length);
  for (const l of c.learners) w.f64(l);
}

function readConf(f: Fields): ConfState {
  const voters = Array.from({ length: f.items('voters', 8) }, () => f.id('voter'));
  const learners = Array.from({ length: f.items('learners', 8) }, () => f.id('learner'));
  return { voters, learners };
}

function writeEntry(w: ByteWriter, e: Entry): void {
  w.f64(e.index);
  w.f64(e.term);
  w.u8(e.type === 'conf' ? 1 : 0);
  w.bytes(e.data);
}

/** Bytes of an entry besides its data: index, term, type, data length. */
const ENTRY_HEAD_BYTES = 8 + 8 + 1 + 4;

function readEntry(f: Fields): Entry {
  return {
    index: logIndex(f.count('entry index')),
    term: term(f.count('entry term')),
    type: f.bool('entry type') ? 'conf' : 'normal',
    data: f.r.bytes(),
  };
}

/**
 * The entries of an append follow its prevIndex one by one, in terms no newer than the
 * message's (Raft §5.3): the log's appendAt asserts as much of what it is given.
 */
function checkEntries(m: Extract<Message, { type: 'app' }>): void {
  m.entries.forEach((e, i) => {
    if (e.index !== m.prevIndex + 1 + i)
      throw new MessageDecodeError(`append entry ${i} has index ${e.index} after ${m.prevIndex}`);
    if (e.term > m.term)
      throw new MessageDecodeError(`append entry ${e.index} of term ${e.term} > ${m.term}`);
  });
}

function writeSnapshot(w: ByteWriter, s: Snapshot): void {
  w.f64(s.index);
  w.f64(s.term);
  writeConf(w, s.conf);
  w.bytes(s.data);
}

function readSnapshot(f: Fields): Snapshot {
  return {
    index: logIndex(f.count('snapshot index')),
    term: term(f.count('snapshot term')),
    conf: readConf(f),
    data: f.r.bytes(),
  };
}

/** Bytes of a snap message besides its data: the envelope, the snapshot's header, its conf. */
const SNAP_ENVELOPE_BYTES = 256;

export function encodeMessage(m: Message): Uint8Array {
  // A snapshot may be hundreds of MiB: room for all of it up front, not by doubling.
  const w = new ByteWriter(m.type === 'snap' ? m.snapshot.data.length + SNAP_ENVELOPE_BYTES : 256);
  w.u8(MESSAGE_TYPE_CODES[m.type]);
  w.f64(m.from);
  w.f64(m.to);
  w.f64(m.term);
  switch (m.type) {
    case 'vote':
    case 'preVote':
      w.f64(m.lastIndex);
      w.f64(m.lastTerm);
      w.u8(m.transfer ? 1 : 0);
      break;
    case 'voteResp':
    case 'preVoteResp':
      w.u8(m.reject ? 1 : 0);
      break;
    case 'app':
      w.f64(m.prevIndex);
      w.f64(m.prevTerm);
      w.f64(m.commit);
      w.u32(m.entries.length);
      for (const e of m.entries) writeEntry(w, e);
      break;
    case 'appResp':
      w.f64(m.index);
      w.u8(m.reject ? 1 : 0);
      w.f64(m.hintIndex);
      w.f64(m.hintTerm);
      break;
    case 'heartbeat':
      w.f64(m.commit);
      w.f64(m.context);
      break;
    case 'heartbeatResp':
    case 'readIndex':
      w.f64(m.context);
      break;
    case 'readIndexResp':
      w.f64(m.context);
      w.f64(m.index);
      break;
    case 'snap':
      writeSnapshot(w, m.snapshot);
      break;
    case 'timeoutNow':
      break;
    default:
      unreachable(m, 'message');
  }
  return w.done();
}

/** Decode one message; throws MessageDecodeError on anything its encoder does not write. */
export function decodeMessage(bytes: Uint8Array): Message {
  const r = new ByteReader(bytes);
  const f = new Fields(r);
  try {
    const code = r.u8();
    const type = TYPES.get(code);
    if (type === undefined) throw new MessageDecodeError(`unknown message type ${code}`);
    const env = { from: f.id('from'), to: f.id('to'), term: term(f.count('term')) };
    let m: Message;
    switch (type) {
      case 'vote':
      case 'preVote':
        m = {
          type,
          ...env,
          lastIndex: logIndex(f.count('lastIndex')),
          lastTerm: term(f.count('lastTerm')),
          transfer: f.bool('transfer'),
        };
        break;
      case 'voteResp':
      case 'preVoteResp':
        m = { type, ...env, reject: f.bool('reject') };
        break;
      case 'app': {
        const prevIndex = logIndex(f.count('prevIndex'));
        const prevTerm = term(f.count('prevTerm'));
        const commit = logIndex(f.count('commit'));
        const n = f.items('entries', ENTRY_HEAD_BYTES);
        const entries = Array.from({ length: n }, () => readEntry(f));
        m = { type, ...env, prevIndex, prevTerm, commit, entries };
        checkEntries(m);
        break;
      }
      case 'appResp':
        m = {
          type,
          ...env,
          index: logIndex(f.count('index')),
          reject: f.bool('reject'),
          hintIndex: logIndex(f.count('hintIndex')),
          hintTerm: term(f.count('hintTerm')),
        };
        break;
      case 'heartbeat':
        m = { type, ...env, commit: logIndex(f.count('commit')), context: f.context() };
        break;
      case 'heartbeatResp':
      case 'readIndex':
        m = { type, ...env, context: f.context() };
        break;
      case 'readIndexResp':
        m = { type, ...env, context: f.context(), index: logIndex(f.count('index')) };
        break;
      case 'snap':
        m = { type, ...env, snapshot: readSnapshot(f) };
        break;
      case 'timeoutNow':
        m = { type, ...env };
        break;
    }
    if (r.pos !== bytes.length)
      throw new MessageDecodeError(`${bytes.length - r.pos} trailing bytes after ${type}`);
    return m;
  } catch (e) {
    if (e instanceof MessageDecodeError) throw e;
    throw new MessageDecodeError(
      `malformed peer message: ${e instanceof Error ? e.message : String(e)}`,
      {
        cause: e,
      },
    );
  }
}
