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
}

/** The hash of the absent state (null), distinct from the hash of "" (which is FNV_OFFSET). */
const NULL_HASH = 0x6e756c6c;

export function kvModel(options: KvModelOptions = {}): Model<KvValue, KvInput, KvOutput> {
  const absent: KvValue = options.absentValue ?? null;
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
    describe: describeKvValue,
    describeOperation: describeKvOperation,
  };
}

export function describeKvValue(value: KvValue): string {
  return value === null ? 'absent' : JSON.stringify(value);
}

/** The canonical text form of one kv operation, e.g. `cas("k", absent → "v") → failed`. */
export function describeKvOperation(input: KvInput, output: KvOutput | undefined): string {
  const key = JSON.stringify(input.key);
  const call = ((): string => {
    switch (input.type) {
      case 'get':
        return `get(${key})`;
      case 'put':
      case 'append':
        return `${input.type}(${key}, ${describeKvValue(input.value)})`;
      case 'delete':
        return `delete(${key})`;
      case 'cas':
        return `cas(${key}, ${describeKvValue(input.expected)} → ${describeKvValue(input.value)})`;
      default:
        return unreachable(input, 'kv input');
    }
  })();
  if (output === undefined) return `${call} → unknown outcome`;
  switch (output.type) {
    case 'get':
      return `${call} → ${describeKvValue(output.value)}`;
    case 'cas':
      return `${call} → ${output.ok ? 'ok' : 'failed'}`;
    default:
      return `${call} → ok`;
  }
}
