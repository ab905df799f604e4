// The workload's register operations as etcd requests, and etcd's answers as the checker's
// outputs. Each checked key is one register of the checker's model (src/check/kv-model.ts): get
// is a Range of the key, put a Put or a one-op Txn, delete a DeleteRange or a one-op Txn, and
// compare-and-set a Txn that puts only if a compare holds: the key's value, its mod revision, or
// its absence (create revision 0).
//
// A mod-revision compare stands for a value compare because every write of the workload writes a
// value never written before, so a key holds value v exactly when its last change is the write
// of v. etcd has no append, so the workload issues none.
import { assert, unreachable } from '../core/base/assert.js';
import { encodeCommand, type Command } from '../core/state/command.js';
import type { EtcdError } from '../core/state/etcd-errors.js';
import type { EtcdResult } from '../core/state/etcd-machine.js';
import type { Compare, RangeResponse, RequestOp } from '../core/state/kv-types.js';
import type { KvInput, KvOutput } from '../check/history.js';

/** What a client sends: a linearizable read (ReadIndex, then Range) or a command for the log. */
export type ClientRequest =
  | { readonly type: 'range'; readonly key: string }
  | {
      readonly type: 'command';
      readonly command: Command;
      /** `command` encoded once for every attempt (encodeCommand). */
      readonly data: Uint8Array;
    };

export type ClientResult =
  | { readonly type: 'range'; readonly response: RangeResponse }
  | { readonly type: 'command'; readonly result: EtcdResult };

/** How a register write goes on the wire; the checker sees the same operation either way. */
export interface WriteForm {
  /** Send a put or delete as a Txn with no compare and that one op. */
  readonly asTxn: boolean;
  /**
   * For a compare-and-set on a present value: the mod revision that wrote it, to compare that
   * instead of the value; undefined compares the value.
   */
  readonly expectedModRevision: number | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Keys and values of the workload are text, stored as UTF-8. */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

export function fromUtf8(b: Uint8Array): string {
  return decoder.decode(b);
}

/** A command for the log, encoded once. */
export function commandRequest(command: Command): ClientRequest {
  return { type: 'command', command, data: encodeCommand(command) };
}

export function requestFor(input: KvInput, form: WriteForm): ClientRequest {
  const key = utf8(input.key);
  const command = commandRequest;
  const txn = (compare: Compare[], op: RequestOp): ClientRequest =>
    command({ type: 'txn', request: { compare, success: [op], failure: [] } });
  switch (input.type) {
    case 'get':
      return { type: 'range', key: input.key };
    case 'put': {
      const request = { key, value: utf8(input.value) };
      return form.asTxn ? txn([], { type: 'put', request }) : command({ type: 'put', request });
    }
    case 'delete':
      return form.asTxn
        ? txn([], { type: 'deleteRange', request: { key } })
        : command({ type: 'deleteRange', request: { key } });
    case 'cas': {
      const compare: Compare =
        input.expected === null
          ? { result: 'EQUAL', key, target: 'CREATE', createRevision: 0 }
          : form.expectedModRevision !== undefined
            ? { result: 'EQUAL', key, target: 'MOD', modRevision: form.expectedModRevision }
            : { result: 'EQUAL', key, target: 'VALUE', value: utf8(input.expected) };
      return txn([compare], {
        type: 'put',
        request: { key, value: utf8(input.value) },
      });
    }
    case 'append':
      throw new Error('kv-requests: etcd has no append');
    default:
      return unreachable(input, 'kv input');
  }
}

/** The checker's output for `input` from etcd's answer, or the error etcd refused it with. */
export function outputOf(input: KvInput, result: ClientResult): KvOutput | EtcdError {
  if (result.type === 'range') {
    assert(input.type === 'get', () => `kv-requests: a range answered ${input.type}`);
    const kv = result.response.kvs[0];
    return { type: 'get', value: kv === undefined ? null : fromUtf8(kv.value) };
  }
  const r = result.result;
  if (r.type === 'error') return r.error;
  switch (input.type) {
    case 'put':
      assert(r.type === 'put' || r.type === 'txn', () => `kv-requests: put answered ${r.type}`);
      return { type: 'put' };
    case 'delete':
      assert(
        r.type === 'deleteRange' || r.type === 'txn',
        () => `kv-requests: delete answered ${r.type}`,
      );
      return { type: 'delete' };
    case 'cas':
      assert(r.type === 'txn', () => `kv-requests: cas answered ${r.type}`);
      return { type: 'cas', ok: r.response.succeeded };
    default:
      throw new Error(`kv-requests: ${input.type} answered by a command`);
  }
}

/** The store revision an answer reports (a write's own revision when it wrote). */
export function revisionOf(result: ClientResult): number | undefined {
  if (result.type === 'range') return result.response.header.revision;
  const r = result.result;
  return r.type === 'error' || r.type === 'noop' ? undefined : r.response.header.revision;
}
