// Differential testing against the brute-force oracle (verification.md §3.3, step 3.3), and proof
// that this harness would notice a broken checker: planted bugs must produce disagreements.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { crossCheck, type CrossCheckReport, type KvChecker } from './crosscheck.js';
import { prng } from '../core/base/index.js';
import { linearizableKvHistory } from './bench.js';
import type { KvInput, KvOperation, KvOutput, KvValue } from './history.js';
import { kvModel } from './kv-model.js';
import { checkOperations } from './linearizability.js';
import type { Model, Operation } from './model.js';

const HISTORIES = 100_000;
/** The brief's ceiling is 60 s; it takes about 1-2 s on one core, so 20 s still flags a regression. */
const CROSS_CHECK_TIME_MAX_MS = 20_000;
/** Each verdict must be common enough that both sides of the checker are exercised. */
const VERDICT_SHARE_MIN = 0.25;

function explain(report: CrossCheckReport): string {
  return report.examples
    .map(
      (d) =>
        `seed ${d.seed} (absent ${JSON.stringify(d.absentValue)}): oracle ${d.expected}, checker ${d.actual}`,
    )
    .join('\n');
}

void describe('cross-check against the brute-force oracle', () => {
  void it(`agrees on ${HISTORIES} random small histories`, () => {
    const report = crossCheck({ count: HISTORIES, seed: 20240601 });
    console.log(
      `cross-check: ${report.count} histories, ${report.ok} ok, ${report.illegal} illegal, ` +
        `${report.disagreements} disagreements, ${report.elapsedMs.toFixed(0)} ms`,
    );
    assert.equal(report.disagreements, 0, explain(report));
    assert.ok(report.ok >= HISTORIES * VERDICT_SHARE_MIN, `only ${report.ok} linearizable`);
    assert.ok(report.illegal >= HISTORIES * VERDICT_SHARE_MIN, `only ${report.illegal} illegal`);
    assert.ok(report.elapsedMs < CROSS_CHECK_TIME_MAX_MS, `took ${report.elapsedMs} ms`);
  });
});

/** Changes one get's value or flips one CAS result. */
function mutateOne(history: KvOperation[], seed: number): KvOperation[] {
  const r = prng(seed);
  const i = r.int(0, history.length);
  const op = history[i] as KvOperation;
  const written = history.flatMap((o) => (o.input.type === 'put' ? [o.input.value] : []));
  if (op.output?.type === 'get') {
    history[i] = { ...op, output: { type: 'get', value: r.pick([null, ...written]) } };
  } else if (op.output?.type === 'cas') {
    history[i] = { ...op, output: { type: 'cas', ok: !op.output.ok } };
  }
  return history;
}

/** Runs the generic checker with a (deliberately broken) variant of the kv model. */
function checkerWith(
  mutate: (m: Model<KvValue, KvInput, KvOutput>) => Model<KvValue, KvInput, KvOutput>,
): KvChecker {
  return (history, absentValue) => {
    const ops: Operation<KvInput, KvOutput>[] = history
      .filter((op) => op.output !== undefined || op.input.type !== 'get')
      .map((op) => (op.output === undefined ? { ...op, return: Infinity } : op));
    return checkOperations(mutate(kvModel({ absentValue })), ops).verdict;
  };
}

void void describe('the plain search, without the read-only hint', () => {
  void it('also agrees with the oracle', () => {
    const check = checkerWith((m) => ({ ...m, readOnly: undefined }));
    const report = crossCheck({ count: 20_000, seed: 99, check });
    assert.equal(report.disagreements, 0, explain(report));
  });

  void it('agrees with the pruned search on mutated 60-operation histories', () => {
    // Too long for the oracle, so the two search variants check each other instead.
    const plain = checkerWith((m) => ({ ...m, readOnly: undefined }));
    const pruned = checkerWith((m) => m);
    let illegal = 0;
    for (let seed = 0; seed < 500; seed++) {
      const history = mutateOne(
        linearizableKvHistory({ ops: 60, keys: 1, clients: 6, seed, unknownRate: 0.05 }),
        seed,
      );
      const verdict = pruned(history, null);
      assert.equal(plain(history, null), verdict, `seed ${seed}`);
      if (verdict === 'illegal') illegal++;
    }
    assert.ok(illegal >= 100, `only ${illegal} of 500 mutated histories illegal`);
  });

  void it('asserts when a read-only hint is wrong', () => {
    const check = checkerWith((m) => ({ ...m, readOnly: () => true }));
    assert.throws(() => crossCheck({ count: 1_000, seed: 3, check }), /read-only operation/);
  });
});

void describe('planted bugs are caught', () => {
  const PLANTED_HISTORIES = 2_000;
  const planted: [string, KvChecker][] = [
    // The memo key ignores the state: configurations with the same linearized set but different
    // values are wrongly merged, so legal histories get rejected.
    [
      'memo key ignores the state',
      checkerWith((m) => ({ ...m, hash: () => 0, equal: () => true })),
    ],
    // The model forgets that a failed CAS is evidence too (and so no longer calls it read-only).
    [
      'model ignores CAS results',
      checkerWith((m) => ({
        ...m,
        readOnly: (input) => input.type === 'get',
        step: (s, input, output) => m.step(s, input, input.type === 'cas' ? undefined : output),
      })),
    ],
    // The model treats append as put.
    [
      'model appends by replacing',
      checkerWith((m) => ({
        ...m,
        step: (s, input, output) =>
          input.type === 'append'
            ? m.step(s, { ...input, type: 'put' }, { type: 'put' })
            : m.step(s, input, output),
      })),
    ],
  ];
  for (const [name, check] of planted) {
    void it(name, () => {
      const report = crossCheck({ count: PLANTED_HISTORIES, seed: 7, check });
      assert.ok(report.disagreements > 0, `${name}: no disagreement in ${report.count} histories`);
    });
  }
});
