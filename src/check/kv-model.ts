// The sequential specification of tenure's key-value operations, one register per key so that the
// checker can split a history by key (Horn & Kroening 2015). The state of a partition is the value
// of its one key.

import { assert, FNV_OFFSET, fnvString, unreachable } from '../core/base/index.js';
import type { KvInput, KvOutput, KvValue } from './history.js';
import type { Model } from './model.js';

export interface KvModelOptions {
  /**
   * What an absent key reads as, and what delete leaves behind. `null` (default) for tenure's own
   * histories; `''` for Porcupine's kv histories, where a missing key reads as the empty string.
   * With `''`, a null in a history (a get result or a CAS `expected`) also means "".
   */
  readonly absentValue?: '' | null | undefined;
  /**
   * A value no operation of the history can observe: no get returns a state containing it and no
   * CAS expects one (unknown-writes.ts writes it for unknown-outcome writes nothing saw). Appending
   * to it leaves it unchanged, so every state that would contain it is one state: they all behave
   * alike (every get and every CAS but a failing one is impossible in them, until the next put or
   * delete), and merging them lets the memo table see that.
   */
  readonly opaqueValue?: string | undefined;
}

/** The hash of the absent state (null), distinct from the hash of "" (which is FNV_OFFSET). */
const NULL_HASH = 0x6e756c6c;

export function kvModel(options: KvModelOptions = {}): Model<KvValue, KvInput, KvOutput> {
  const absent: KvValue = options.absentValue ?? null;
  const opaque = options.opaqueValue;
  const norm = (v: KvValue): KvValue => (v === null ? absent : v);
  return {
    partition: (input) => input.key,
    init: () => absent,
    step: (state, input, output) => {
      assert(
        output === undefined || output.type === input.type,
        () => `kv history: ${input.type} operation with a ${output?.type} result`,
      );
      switch (input.type) {
        case 'get':
          if (output === undefined) return state;
          return norm((output as Extract<KvOutput, { type: 'get' }>).value) === state
            ? state
            : undefined;
        case 'put':
          return input.value;
        case 'append':
          if (state === opaque) return state;
          // Appending to an absent key creates it, as Porcupine's kv model does.
          return (state ?? '') + input.value;
        case 'delete':
          return absent;
        case 'cas': {
          const matches = norm(input.expected) === state;
          if (output !== undefined) {
            const ok = (output as Extract<KvOutput, { type: 'cas' }>).ok;
            if (ok !== matches) return undefined;
          }
          return matches ? input.value : state;
        }
        default:
          return unreachable(input, 'kv input');
      }
    },
    // A get, or a CAS that reports failure, never changes the value.
    readOnly: (input, output) => input.type === 'get' || (output.type === 'cas' && !output.ok),
    equal: (a, b) => a === b,
    hash: (state) => (state === null ? NULL_HASH : fnvString(FNV_OFFSET, state)),
    effectKey: kvEffectKey,
    describe: (state) => describeKvValue(state, opaque),
    describeOperation: (input, output) => describeKvOperation(input, output, opaque),
  };
}

/** Equal exactly for inputs that are the same operation (type, key, values). */
function kvEffectKey(input: KvInput): string {
  const key = JSON.stringify(input.key);
  switch (input.type) {
    case 'get':
    case 'delete':
      return `${input.type} ${key}`;
    case 'put':
    case 'append':
      return `${input.type} ${key} ${JSON.stringify(input.value)}`;
    case 'cas':
      return `cas ${key} ${JSON.stringify(input.expected)} ${JSON.stringify(input.value)}`;
    default:
      return unreachable(input, 'kv input');
  }
}

/** `opaque`: kvModel's opaqueValue, shown as `opaque` rather than as its character. */
export function describeKvValue(value: KvValue, opaque?: string): string {
  if (value !== null && value === opaque) return 'opaque';
  return value === null ? 'absent' : JSON.stringify(value);
}

/** The canonical text form of one kv operation, e.g. `cas("k", absent → "v") → failed`. */
export function describeKvOperation(
  input: KvInput,
  output: KvOutput | undefined,
  opaque?: string,
): string {
  const value = (v: KvValue): string => describeKvValue(v, opaque);
  const key = JSON.stringify(input.key);
  const call = ((): string => {
    switch (input.type) {
      case 'get':
        return `get(${key})`;
      case 'put':
      case 'append':
        return `${input.type}(${key}, ${value(input.value)})`;
      case 'delete':
        return `delete(${key})`;
      case 'cas':
        return `cas(${key}, ${value(input.expected)} → ${value(input.value)})`;
      default:
        return unreachable(input, 'kv input');
    }
  })();
  if (output === undefined) return `${call} → unknown outcome`;
  switch (output.type) {
    case 'get':
      return `${call} → ${value(output.value)}`;
    case 'cas':
      return `${call} → ${output.ok ? 'ok' : 'failed'}`;
    default:
      return `${call} → ok`;
  }
}
