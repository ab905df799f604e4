// The peer wire format for Raft messages: compact little-endian binary, one message per frame
// payload. Data, not objects: the decoder builds the same plain values the core produced.
import { unreachable } from '../core/base/assert.js';
import { logIndex, nodeId, term } from '../core/base/units.js';
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

function writeConf(w: ByteWriter, c: ConfState): void {
  w.u32(c.voters.length);
  for (const v of c.voters) w.f64(v);
  w.u32(c.learners.length);
  for (const l of c.learners) w.f64(l);
}

function readConf(r: ByteReader): ConfState {
  const voters = Array.from({ length: r.u32() }, () => nodeId(r.f64()));
  const learners = Array.from({ length: r.u32() }, () => nodeId(r.f64()));
  return { voters, learners };
}

function writeEntry(w: ByteWriter, e: Entry): void {
  w.f64(e.index);
  w.f64(e.term);
  w.u8(e.type === 'conf' ? 1 : 0);
  w.bytes(e.data);
}

function readEntry(r: ByteReader): Entry {
  return {
    index: logIndex(r.f64()),
    term: term(r.f64()),
    type: r.u8() === 1 ? 'conf' : 'normal',
    data: r.bytes(),
  };
}

function writeSnapshot(w: ByteWriter, s: Snapshot): void {
  w.f64(s.index);
  w.f64(s.term);
  writeConf(w, s.conf);
  w.bytes(s.data);
}

function readSnapshot(r: ByteReader): Snapshot {
  return { index: logIndex(r.f64()), term: term(r.f64()), conf: readConf(r), data: r.bytes() };
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

export function decodeMessage(bytes: Uint8Array): Message {
  const r = new ByteReader(bytes);
  try {
    const code = r.u8();
    const type = TYPES.get(code);
    if (type === undefined) throw new MessageDecodeError(`unknown message type ${code}`);
    const env = { from: nodeId(r.f64()), to: nodeId(r.f64()), term: term(r.f64()) };
    let m: Message;
    switch (type) {
      case 'vote':
      case 'preVote':
        m = {
          type,
          ...env,
          lastIndex: logIndex(r.f64()),
          lastTerm: term(r.f64()),
          transfer: r.u8() === 1,
        };
        break;
      case 'voteResp':
      case 'preVoteResp':
        m = { type, ...env, reject: r.u8() === 1 };
        break;
      case 'app': {
        const prevIndex = logIndex(r.f64());
        const prevTerm = term(r.f64());
        const commit = logIndex(r.f64());
        const entries = Array.from({ length: r.u32() }, () => readEntry(r));
        m = { type, ...env, prevIndex, prevTerm, commit, entries };
        break;
      }
      case 'appResp':
        m = {
          type,
          ...env,
          index: logIndex(r.f64()),
          reject: r.u8() === 1,
          hintIndex: logIndex(r.f64()),
          hintTerm: term(r.f64()),
        };
        break;
      case 'heartbeat':
        m = { type, ...env, commit: logIndex(r.f64()), context: r.f64() };
        break;
      case 'heartbeatResp':
      case 'readIndex':
        m = { type, ...env, context: r.f64() };
        break;
      case 'readIndexResp':
        m = { type, ...env, context: r.f64(), index: logIndex(r.f64()) };
        break;
      case 'snap':
        m = { type, ...env, snapshot: readSnapshot(r) };
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
