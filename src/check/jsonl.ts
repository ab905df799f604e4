// tenure's own history file format: one KvOperation as JSON per line. JSON has no Infinity, so an
// unknown outcome is written with `"return": null` and no `output` (or `"output": null`).

import type { KvInput, KvOperation, KvOutput } from './history.js';

export class KvHistoryParseError extends Error {
  override readonly name = 'KvHistoryParseError';
  readonly code = 'KV_HISTORY_PARSE';
  constructor(
    message: string,
    /** 1-based line number. */
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
  }
}

export function formatKvJsonl(history: readonly KvOperation[]): string {
  return history
    .map((op) =>
      JSON.stringify({
        clientId: op.clientId,
        input: op.input,
        output: op.output ?? null,
        call: op.call,
        return: op.return === Infinity ? null : op.return,
      }),
    )
    .map((line) => `${line}\n`)
    .join('');
}

export function parseKvJsonl(text: string): KvOperation[] {
  const ops: KvOperation[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (cause) {
      throw new KvHistoryParseError(`not JSON: ${String(cause)}`, index + 1);
    }
    ops.push(toOperation(value, index + 1));
  });
  return ops;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isValue = (v: unknown): v is string | null => v === null || typeof v === 'string';

function toOperation(v: unknown, line: number): KvOperation {
  const fail = (what: string): never => {
    throw new KvHistoryParseError(what, line);
  };
  if (!isObject(v)) return fail('expected an object');
  const { clientId, call } = v;
  const ret = v['return'];
  if (typeof clientId !== 'number' || !Number.isInteger(clientId)) return fail('bad clientId');
  if (typeof call !== 'number' || !Number.isFinite(call)) return fail('bad call time');
  if (ret !== null && (typeof ret !== 'number' || !(ret >= call))) {
    return fail('return must be a number ≥ call, or null for an unknown outcome');
  }
  const input = toInput(v['input'], fail);
  const output =
    v['output'] === undefined || v['output'] === null ? undefined : toOutput(v['output'], fail);
  if (output !== undefined && output.type !== input.type) {
    return fail(`a ${input.type} operation with a ${output.type} output`);
  }
  return { clientId, input, output, call, return: ret === null ? Infinity : ret };
}

function toInput(v: unknown, fail: (what: string) => never): KvInput {
  if (!isObject(v) || typeof v['key'] !== 'string') return fail('bad input');
  const key = v['key'];
  const value = v['value'];
  switch (v['type']) {
    case 'get':
    case 'delete':
      return { type: v['type'], key };
    case 'put':
    case 'append':
      if (typeof value !== 'string') return fail(`${v['type']} needs a string value`);
      return { type: v['type'], key, value };
    case 'cas': {
      const expected = v['expected'];
      if (typeof value !== 'string' || !isValue(expected)) {
        return fail('cas needs a string value and a string or null expected');
      }
      return { type: 'cas', key, expected, value };
    }
    default:
      return fail(`unknown input type ${JSON.stringify(v['type'])}`);
  }
}

function toOutput(v: unknown, fail: (what: string) => never): KvOutput {
  if (!isObject(v)) return fail('bad output');
  switch (v['type']) {
    case 'get':
      if (!isValue(v['value'])) return fail('get output needs a string or null value');
      return { type: 'get', value: v['value'] };
    case 'put':
    case 'append':
    case 'delete':
      return { type: v['type'] };
    case 'cas':
      if (typeof v['ok'] !== 'boolean') return fail('cas output needs a boolean ok');
      return { type: 'cas', ok: v['ok'] };
    default:
      return fail(`unknown output type ${JSON.stringify(v['type'])}`);
  }
}
