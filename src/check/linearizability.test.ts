// The checker's contract beyond verdicts: budgets give 'unknown', failures are explained, the
// search is generic over models, and histories round-trip through the JSONL format.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { linearizableKvHistory, runBench } from './bench.js';
import type { KvOperation } from './history.js';
import { formatKvJsonl, KvHistoryParseError, parseKvJsonl } from './jsonl.js';
import { checkKv, checkOperations } from './linearizability.js';
import type { Model, Operation } from './model.js';

/** Many concurrent puts of distinct values and a read of a value none wrote: a big search. */
function hardIllegalHistory(writers: number): KvOperation[] {
  const ops: KvOperation[] = [];
  for (let c = 0; c < writers; c++) {
    ops.push({
      clientId: c,
      input: { type: 'put', key: 'k', value: `v${c}` },
      output: { type: 'put' },
      call: 0,
      return: 10,
    });
    ops.push({
      clientId: writers + c,
      input: { type: 'get', key: 'k' },
      output: { type: 'get', value: `v${(c + 1) % writers}` },
      call: 0,
      return: 10,
    });
  }
  ops.push({
    clientId: 2 * writers,
    input: { type: 'get', key: 'k' },
    output: { type: 'get', value: 'never written' },
    call: 0,
    return: 10,
  });
  return ops;
}

void describe('checkKv budgets', () => {
  void it('returns unknown when the injected clock passes the deadline', () => {
    let t = 0;
    const now = (): number => (t += 1000);
    const result = checkKv(hardIllegalHistory(10), { timeoutMs: 1, now });
    assert.equal(result.verdict, 'unknown');
    assert.match(result.detail ?? '', /time budget of 1 ms ran out.*"k"/);
  });

  void it('returns unknown when the memo tables are full', () => {
    const result = checkKv(hardIllegalHistory(10), { memoEntriesMax: 100 });
    assert.equal(result.verdict, 'unknown');
    assert.match(result.detail ?? '', /memo tables reached/);
  });

  void it('finishes the same search without a budget', () => {
    assert.equal(checkKv(hardIllegalHistory(6)).verdict, 'illegal');
  });

  void it('finds an easy illegal partition while a hard one is still running', () => {
    const easy: KvOperation = {
      clientId: 99,
      input: { type: 'get', key: 'z' },
      output: { type: 'get', value: 'ghost' },
      call: 0,
      return: 1,
    };
    const result = checkKv([...hardIllegalHistory(16), easy], { timeoutMs: 10_000 });
    assert.equal(result.verdict, 'illegal');
    assert.equal(result.illegalKey, 'z');
    assert.equal(result.partitions, 2);
  });
});

void describe('checkOperations is generic', () => {
  // A FIFO queue of numbers: enqueue(n) / dequeue() → n | empty. Not partitioned.
  type Input = { readonly op: 'enq'; readonly n: number } | { readonly op: 'deq' };
  type Output = { readonly n: number | null } | null;
  const queue: Model<readonly number[], Input, Output> = {
    init: () => [],
    step: (s, input, output) => {
      if (input.op === 'enq') return [...s, input.n];
      const head = s[0] ?? null;
      if (output !== undefined && output !== null && output.n !== head) return undefined;
      return s.slice(1);
    },
    equal: (a, b) => a.length === b.length && a.every((x, i) => x === b[i]),
    hash: (s) => s.reduce((h, x) => Math.imul(h ^ x, 16777619) >>> 0, 2166136261),
    describe: (s) => `[${s.join(', ')}]`,
    describeOperation: (i, o) => (i.op === 'enq' ? `enq(${i.n})` : `deq() → ${o?.n ?? 'empty'}`),
  };
  const at = (clientId: number, call: number, ret: number, input: Input, output: Output) =>
    ({ clientId, input, output, call, return: ret }) satisfies Operation<Input, Output>;

  void it('accepts a queue history with overlapping enqueues', () => {
    const ops = [
      at(0, 0, 5, { op: 'enq', n: 1 }, null),
      at(1, 0, 5, { op: 'enq', n: 2 }, null),
      at(2, 6, 7, { op: 'deq' }, { n: 2 }),
      at(2, 8, 9, { op: 'deq' }, { n: 1 }),
    ];
    assert.deepEqual(checkOperations(queue, ops), { verdict: 'ok', partitions: 1 });
  });

  void it('rejects FIFO order violated in real time, naming the operation', () => {
    const ops = [
      at(0, 0, 1, { op: 'enq', n: 1 }, null),
      at(1, 2, 3, { op: 'enq', n: 2 }, null),
      at(2, 4, 5, { op: 'deq' }, { n: 2 }),
    ];
    const result = checkOperations(queue, ops);
    assert.equal(result.verdict, 'illegal');
    assert.equal(result.illegalKey, '');
    assert.match(result.detail ?? '', /client 2 deq\(\) → 2 \[4, 5\] cannot be linearized/);
    assert.match(result.detail ?? '', /state \[1, 2\]/);
  });
});

void describe('JSONL histories', () => {
  void it('round-trips, writing Infinity as null', () => {
    const history = linearizableKvHistory({
      ops: 300,
      keys: 3,
      clients: 4,
      seed: 5,
      unknownRate: 0.05,
    });
    assert.ok(history.some((op) => op.return === Infinity));
    const text = formatKvJsonl(history);
    assert.match(text, /"return":null/);
    assert.deepEqual(parseKvJsonl(text), history);
  });

  void it('rejects a malformed line with its number', () => {
    const good = formatKvJsonl([
      {
        clientId: 0,
        input: { type: 'get', key: 'k' },
        output: { type: 'get', value: null },
        call: 0,
        return: 1,
      },
    ]);
    assert.throws(
      () => parseKvJsonl(good + '{"clientId":0,"input":{"type":"get"},"call":0,"return":1}\n'),
      (e: unknown) => e instanceof KvHistoryParseError && e.line === 2,
    );
    assert.throws(() => parseKvJsonl('not json'), KvHistoryParseError);
  });
});

void describe('bench history', () => {
  void it('is linearizable by construction, with unknown outcomes', () => {
    const report = runBench({ ops: 2_000, keys: 4, clients: 8, seed: 11, unknownRate: 0.01 });
    assert.equal(report.verdict, 'ok');
    assert.equal(report.partitions, 4);
    assert.ok(report.unknownOps > 0);
  });
});
