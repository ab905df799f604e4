// A parser for Porcupine's kv histories (test_data/kv/*.txt; format in
// testdata/porcupine/README.md). Each line is one EDN map, an :invoke or an :ok event; line order
// is time order and there are no timestamps, so line numbers serve as call and return times. An
// operation is the :invoke line of a process and the next :ok line of the same process.
//
// Porcupine's kv model reads a missing key as "", so check these histories with
// `absentValue: ''` (see checkPorcupineKv).

import type { KvInput, KvOperation, KvOutput } from './history.js';
import { checkKv, type CheckOptions } from './linearizability.js';
import type { CheckResult } from './model.js';

export class PorcupineParseError extends Error {
  override readonly name = 'PorcupineParseError';
  readonly code = 'PORCUPINE_PARSE';
  constructor(
    message: string,
    /** 1-based line number of the offending line. */
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
  }
}

// The exact shape every line has (README: fields in this order, no `"` inside keys or values).
const LINE =
  /^\{:process (\d+), :type :(invoke|ok), :f :(get|put|append), :key "([^"]*)", :value (?:nil|"([^"]*)")\}$/;

interface Pending {
  readonly line: number;
  readonly f: 'get' | 'put' | 'append';
  readonly input: KvInput;
}

/**
 * Parses one history. Operations come out in call order. An :invoke left without its :ok at the
 * end of the file becomes an unknown outcome (return = Infinity); the published files have none.
 */
export function parsePorcupineKv(text: string): KvOperation[] {
  const ops: KvOperation[] = [];
  const pending = new Map<number, Pending>();
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const line = raw.trim();
    if (line === '') return;
    const m = LINE.exec(line);
    if (m === null) throw new PorcupineParseError(`not a kv event: ${line}`, lineNo);
    const [, processText, type, f, key, value] = m as unknown as [
      string,
      string,
      'invoke' | 'ok',
      'get' | 'put' | 'append',
      string,
      string | undefined,
    ];
    const clientId = Number(processText);
    if (type === 'invoke') {
      if (pending.has(clientId)) {
        throw new PorcupineParseError(`process ${clientId} invoked twice without an :ok`, lineNo);
      }
      let input: KvInput;
      if (f === 'get') input = { type: 'get', key };
      else if (value === undefined) {
        throw new PorcupineParseError(`:invoke ${f} needs a string value`, lineNo);
      } else input = { type: f, key, value };
      pending.set(clientId, { line: lineNo, f, input });
      return;
    }
    const inv = pending.get(clientId);
    if (inv === undefined) {
      throw new PorcupineParseError(`:ok of process ${clientId} without an :invoke`, lineNo);
    }
    if (inv.f !== f || inv.input.key !== key) {
      throw new PorcupineParseError(
        `:ok ${f} ${JSON.stringify(key)} does not match the :invoke on line ${inv.line}`,
        lineNo,
      );
    }
    pending.delete(clientId);
    let output: KvOutput;
    if (f === 'get') {
      if (value === undefined) throw new PorcupineParseError(':ok get needs a string', lineNo);
      output = { type: 'get', value };
    } else output = { type: f };
    ops.push({ clientId, input: inv.input, output, call: inv.line, return: lineNo });
  });
  for (const [clientId, inv] of pending) {
    ops.push({ clientId, input: inv.input, output: undefined, call: inv.line, return: Infinity });
  }
  return ops.sort((a, b) => a.call - b.call);
}

/** Checks a parsed Porcupine kv history with Porcupine's model: a missing key reads as "". */
export function checkPorcupineKv(
  history: readonly KvOperation[],
  options: CheckOptions = {},
): CheckResult {
  return checkKv(history, { ...options, absentValue: '' });
}
