// The frames of request forwarding between members (forwarder.ts), as bytes: a binary header (kind,
// request ID, the deadline, the operation) and the operation's own encoding — a command in its log
// encoding (core/state/command.ts: binary for a put), anything else in tagged JSON. Answers carry
// the outcome as one of three kinds, so the asker knows whether the request may have been done.
import type { NodeId } from '../../core/base/units.js';
import type { Command } from '../../core/state/command.js';
import { decodeCommand, encodeCommand } from '../../core/state/command.js';
import type { EtcdError, GrpcCode } from '../../core/state/etcd-errors.js';
import type { LeaseId } from '../../core/state/kv-types.js';
import { decodeTagged, encodeTagged } from '../../core/state/tagged-json.js';
import { ByteReader, ByteWriter } from '../../core/base/bytes.js';
import type { MemberCommand } from './server-machine.js';
import { isMemberCommand } from './server-machine.js';

/**
 * What a follower asks the leader to do; or, for `hashKV`, what the leader's corruption check
 * asks every member (corruption-check.ts), which any member answers.
 */
export type ForwardOp =
  | { readonly op: 'propose'; readonly cmd: Command }
  | { readonly op: 'member'; readonly cmd: MemberCommand }
  | { readonly op: 'timeToLive'; readonly id: LeaseId; readonly keys: boolean }
  | { readonly op: 'keepAlive'; readonly id: LeaseId }
  | { readonly op: 'memberAdd'; readonly peerUrls: readonly string[]; readonly isLearner: boolean }
  | { readonly op: 'memberRemove'; readonly id: bigint }
  | { readonly op: 'hashKV'; readonly revision: number }
  | { readonly op: 'memberUpdate'; readonly id: bigint; readonly peerUrls: readonly string[] }
  | { readonly op: 'memberPromote'; readonly id: bigint };

/**
 * A request's outcome as the leader (or the asker, when no answer came) knows it:
 * - `done`: it was done; `index` is the log index a follower must apply before answering its
 *   client (so that a read there after it sees it);
 * - `refused`: it was certainly not done and never will be (safe to ask again);
 * - `unknown`: it may have been done, or may still be (a proposal whose fate was not seen).
 */
export type ForwardAnswer =
  | { readonly kind: 'done'; readonly value: unknown; readonly index: number }
  | { readonly kind: 'refused'; readonly error: EtcdError }
  | { readonly kind: 'unknown'; readonly error: EtcdError };

export type Frame =
  | {
      readonly kind: 'request';
      readonly id: number;
      /** Past this reading of the receiver's clock the asker no longer waits: do not start it. */
      readonly deadlineMs: number;
      readonly body: ForwardOp;
    }
  | { readonly kind: 'answer'; readonly id: number; readonly answer: ForwardAnswer };

const KIND_REQUEST = 1;
const KIND_ANSWER = 2;
// New operations go at the end: a member that does not know one drops its frame as malformed,
// and the asker's deadline answers for it.
const OPS = [
  'propose',
  'member',
  'timeToLive',
  'keepAlive',
  'memberAdd',
  'memberRemove',
  'hashKV',
  'memberUpdate',
  'memberPromote',
] as const;
const ANSWERS = ['done', 'refused', 'unknown'] as const;

const text = new TextEncoder();
const untext = new TextDecoder();

export class FrameDecodeError extends Error {
  override readonly name = 'FrameDecodeError';
  readonly code = 'BAD_FORWARD_FRAME';
}

export function encodeFrame(f: Frame): Uint8Array {
  const w = new ByteWriter();
  if (f.kind === 'request') {
    w.u8(KIND_REQUEST);
    w.f64(f.id);
    w.f64(f.deadlineMs);
    const b = f.body;
    w.u8(OPS.indexOf(b.op));
    switch (b.op) {
      case 'propose':
        w.bytes(encodeCommand(b.cmd));
        break;
      case 'member':
        w.bytes(encodeTagged(b.cmd));
        break;
      case 'timeToLive':
        w.bytes(text.encode(b.id.toString()));
        w.u8(b.keys ? 1 : 0);
        break;
      case 'keepAlive':
        w.bytes(text.encode(b.id.toString()));
        break;
      case 'memberAdd':
        w.bytes(encodeTagged({ peerUrls: b.peerUrls, isLearner: b.isLearner }));
        break;
      case 'memberRemove':
      case 'memberPromote':
        w.bytes(text.encode(b.id.toString()));
        break;
      case 'hashKV':
        w.f64(b.revision);
        break;
      case 'memberUpdate':
        w.bytes(text.encode(b.id.toString()));
        w.bytes(encodeTagged({ peerUrls: b.peerUrls }));
        break;
    }
    return w.done();
  }
  w.u8(KIND_ANSWER);
  w.f64(f.id);
  const a = f.answer;
  w.u8(ANSWERS.indexOf(a.kind));
  if (a.kind === 'done') {
    w.f64(a.index);
    w.bytes(encodeTagged(a.value ?? null));
  } else {
    w.bytes(text.encode(a.error.code));
    w.bytes(text.encode(a.error.message));
  }
  return w.done();
}

/** Decode a frame; throws FrameDecodeError for anything malformed (a peer bug, never trusted). */
export function decodeFrame(bytes: Uint8Array): Frame {
  try {
    return decodeInner(bytes);
  } catch (e) {
    if (e instanceof FrameDecodeError) throw e;
    throw new FrameDecodeError(e instanceof Error ? e.message : String(e));
  }
}

/** The codes an answer's error may carry: etcd's, and the API edge's (status.ts). */
const ANSWER_CODES: ReadonlySet<string> = new Set<GrpcCode>([
  'Canceled',
  'InvalidArgument',
  'NotFound',
  'FailedPrecondition',
  'OutOfRange',
  'ResourceExhausted',
  'Unavailable',
  'DeadlineExceeded',
  'DataLoss',
  'Unknown',
]);

/** A request ID, a deadline or an index: a finite number (a NaN deadline would never pass). */
function finite(r: ByteReader, what: string): number {
  const v = r.f64();
  if (!Number.isFinite(v)) throw new FrameDecodeError(`${what} is not a finite number`);
  return v;
}

/** A lease or member ID, written as decimal text: digits only (BigInt would take " 0x1 "). */
function decimalId(r: ByteReader): bigint {
  const s = untext.decode(r.bytes());
  if (!/^-?\d{1,20}$/.test(s)) throw new FrameDecodeError(`bad ID '${s.slice(0, 24)}'`);
  return BigInt(s);
}

/** A strict boolean byte: the encoder writes 0 or 1 only. */
function bool(r: ByteReader): boolean {
  const b = r.u8();
  if (b > 1) throw new FrameDecodeError(`bad boolean ${b}`);
  return b === 1;
}

function decodeInner(bytes: Uint8Array): Frame {
  const r = new ByteReader(bytes);
  const kind = r.u8();
  const id = finite(r, 'frame ID');
  let f: Frame;
  if (kind === KIND_REQUEST) {
    const deadlineMs = finite(r, 'deadline');
    const op = OPS[r.u8()];
    const body = decodeOp(op, r);
    f = { kind: 'request', id, deadlineMs, body };
  } else if (kind === KIND_ANSWER) {
    f = { kind: 'answer', id, answer: decodeAnswer(r) };
  } else throw new FrameDecodeError(`unknown frame kind ${kind}`);
  if (r.pos !== bytes.length) throw new FrameDecodeError('trailing bytes after a frame');
  return f;
}

function decodeAnswer(r: ByteReader): ForwardAnswer {
  const outcome = ANSWERS[r.u8()];
  if (outcome === undefined) throw new FrameDecodeError('unknown answer kind');
  if (outcome === 'done') {
    const index = finite(r, 'index');
    const value: unknown = decodeTagged(r.bytes());
    return { kind: 'done', value, index };
  }
  const code = untext.decode(r.bytes());
  if (!ANSWER_CODES.has(code)) throw new FrameDecodeError(`unknown error code '${code}'`);
  const message = untext.decode(r.bytes());
  return { kind: outcome, error: { code: code as GrpcCode, message } };
}

function decodeOp(op: (typeof OPS)[number] | undefined, r: ByteReader): ForwardOp {
  switch (op) {
    case 'propose': {
      // decodeCommand checks the command's shape: the leader proposes what it returns.
      const cmd = decodeCommand(r.bytes());
      if (cmd === null) throw new FrameDecodeError('forwarded command does not decode');
      return { op, cmd };
    }
    case 'member': {
      const cmd: unknown = decodeTagged(r.bytes());
      if (!isMemberCommand(cmd))
        throw new FrameDecodeError('forwarded member command is malformed');
      return { op, cmd };
    }
    case 'timeToLive': {
      const id = decimalId(r);
      return { op, id, keys: bool(r) };
    }
    case 'keepAlive':
      return { op, id: decimalId(r) };
    case 'memberAdd': {
      const v: unknown = decodeTagged(r.bytes());
      if (!isMemberAdd(v)) throw new FrameDecodeError('forwarded member add is malformed');
      return { op, peerUrls: v.peerUrls, isLearner: v.isLearner };
    }
    case 'memberRemove':
    case 'memberPromote':
      return { op, id: decimalId(r) };
    case 'hashKV': {
      const revision = r.f64();
      if (!Number.isSafeInteger(revision) || revision < 0)
        throw new FrameDecodeError(`bad hash revision ${revision}`);
      return { op, revision };
    }
    case 'memberUpdate': {
      const id = decimalId(r);
      const v: unknown = decodeTagged(r.bytes());
      if (!isPeerUrls(v)) throw new FrameDecodeError('forwarded member update is malformed');
      return { op, id, peerUrls: v.peerUrls };
    }
    default:
      throw new FrameDecodeError('unknown forwarded operation');
  }
}

function isMemberAdd(v: unknown): v is { peerUrls: string[]; isLearner: boolean } {
  if (typeof v !== 'object' || v === null) return false;
  const { peerUrls, isLearner } = v as { peerUrls?: unknown; isLearner?: unknown };
  return (
    Array.isArray(peerUrls) &&
    peerUrls.every((u) => typeof u === 'string') &&
    typeof isLearner === 'boolean'
  );
}

function isPeerUrls(v: unknown): v is { peerUrls: string[] } {
  if (typeof v !== 'object' || v === null) return false;
  const { peerUrls } = v as { peerUrls?: unknown };
  return Array.isArray(peerUrls) && peerUrls.every((u) => typeof u === 'string');
}

/** For logs and tests: a frame's kind, ID and operation in one line. */
export function describeFrame(from: NodeId, f: Frame): string {
  return f.kind === 'request'
    ? `${from} asks #${f.id} ${f.body.op} until ${f.deadlineMs.toFixed(0)}`
    : `${from} answers #${f.id} ${f.answer.kind}`;
}
