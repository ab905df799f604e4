// A replicated map of string registers with get/put/append/delete/cas, and client sessions that
// make retried commands idempotent (Raft thesis §6.3): each client numbers its commands, and a
// command whose number was already applied returns the recorded result instead of applying again.
// A small machine for tests that need a replicated state machine without the etcd key space.
import { fnvNumber, fnvString, FNV_OFFSET } from '../base/hash.js';
import type { LogIndex } from '../base/units.js';
import type { StateMachine } from './machine.js';

export type RegisterOp =
  | { readonly type: 'get'; readonly key: string }
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'append'; readonly key: string; readonly value: string }
  | { readonly type: 'delete'; readonly key: string }
  | {
      readonly type: 'cas';
      readonly key: string;
      readonly expected: string | null;
      readonly value: string;
    };

export type RegisterResult =
  | { readonly type: 'get'; readonly value: string | null }
  | { readonly type: 'put' | 'append' | 'delete' }
  | { readonly type: 'cas'; readonly ok: boolean };

/** A command in the log: the operation plus the client session it belongs to. */
export interface RegisterCommand {
  readonly session: number;
  readonly seq: number;
  readonly op: RegisterOp;
}

interface Session {
  seq: number;
  result: RegisterResult;
}

/** Sessions kept at most; the oldest is evicted beyond this (a client that returns gets an error). */
export const SESSIONS_MAX = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeRegisterCommand(c: RegisterCommand): Uint8Array {
  return encoder.encode(JSON.stringify(c));
}

export function decodeRegisterCommand(data: Uint8Array): RegisterCommand {
  return JSON.parse(decoder.decode(data)) as RegisterCommand;
}

export function applyRegisterOp(values: Map<string, string>, op: RegisterOp): RegisterResult {
  switch (op.type) {
    case 'get':
      return { type: 'get', value: values.get(op.key) ?? null };
    case 'put':
      values.set(op.key, op.value);
      return { type: 'put' };
    case 'append':
      values.set(op.key, (values.get(op.key) ?? '') + op.value);
      return { type: 'append' };
    case 'delete':
      values.delete(op.key);
      return { type: 'delete' };
    case 'cas': {
      const cur = values.get(op.key) ?? null;
      if (cur !== op.expected) return { type: 'cas', ok: false };
      values.set(op.key, op.value);
      return { type: 'cas', ok: true };
    }
  }
}

/** The result of applying an entry: undefined for the leader's no-op. */
export type RegisterApplyResult =
  { readonly session: number; readonly seq: number; readonly result: RegisterResult } | undefined;

export class RegisterMachine implements StateMachine<RegisterApplyResult> {
  private values = new Map<string, string>();
  private sessions = new Map<number, Session>();

  constructor() {}

  apply(_index: LogIndex, data: Uint8Array): RegisterApplyResult {
    if (data.length === 0) return undefined;
    const cmd = decodeRegisterCommand(data);
    const s = this.sessions.get(cmd.session);
    if (s && cmd.seq <= s.seq) {
      // A retry of a command we already applied: answer it, do not apply it again. An older
      // sequence number is a retry the client has already given up on; it is dropped too.
      return { session: cmd.session, seq: cmd.seq, result: s.result };
    }
    const result = applyRegisterOp(this.values, cmd.op);
    this.sessions.delete(cmd.session); // re-insert to keep insertion order = recency
    this.sessions.set(cmd.session, { seq: cmd.seq, result });
    if (this.sessions.size > SESSIONS_MAX) {
      const oldest = this.sessions.keys().next().value as number;
      this.sessions.delete(oldest);
    }
    return { session: cmd.session, seq: cmd.seq, result };
  }

  /** A local read of the current value (after ReadIndex has made it linearizable). */
  get(key: string): string | null {
    return this.values.get(key) ?? null;
  }

  snapshot(): Uint8Array {
    return encoder.encode(JSON.stringify({ v: [...this.values], s: [...this.sessions] }));
  }

  restore(data: Uint8Array): void {
    const o = JSON.parse(decoder.decode(data)) as { v: [string, string][]; s: [number, Session][] };
    this.values = new Map(o.v);
    this.sessions = new Map(o.s);
  }

  digest(): number {
    let h = FNV_OFFSET;
    for (const k of [...this.values.keys()].sort()) {
      h = fnvString(h, k);
      h = fnvString(h, this.values.get(k) ?? '');
    }
    return fnvNumber(h, this.sessions.size);
  }
}
