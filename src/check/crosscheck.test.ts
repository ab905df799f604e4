// Differential testing against the brute-force oracle, and proof that this harness would notice a
// broken checker: planted bugs must produce disagreements. Histories with many unknown-outcome
// writes and failed CASes check the pruning of unknown writes (unknown-writes.ts) the same way.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { crossCheck, type CrossCheckReport, historySeed, type KvChecker } from './crosscheck.js';
import { prng } from '../core/base/index.js';
import { linearizableKvHistory } from './bench.js';
import type { KvInput, KvOperation, KvOutput, KvValue } from './history.js';
import { kvModel } from './kv-model.js';
import { checkKv, checkOperations } from './linearizability.js';
import type { Model, Operation } from './model.js';
import { randomKvHistory, type RandomHistoryOptions } from './random-history.js';
import { pruneUnknownWrites } from './unknown-writes.js';

const HISTORIES = 100_000;
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

void describe('the plain search, without the read-only hint', () => {
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

// Histories as a fault harness records them: many writes time out, every write has a value of
// its own (so that pruning can identify it), and CASes expect values written before them.
const UNKNOWN_WRITE_HISTORIES = 20_000;
const DISTINCT: RandomHistoryOptions = {
  unknownWrites: 0.4,
  distinctValues: true,
  opsMax: 9,
  clientsMax: 4,
  keysMax: 1,
};
/** Shared values (a, b, c): pruning must then mostly leave writes alone. */
const SHARED: RandomHistoryOptions = { unknownWrites: 0.4, opsMax: 9, clientsMax: 4, keysMax: 1 };
/** Each rule must fire in at least this share of the distinct-value histories. */
const RULE_SHARE_MIN = 0.005;
/** Histories with an unknown write, and with a failed CAS, must be at least this common. */
const SHAPE_SHARE_MIN = 0.25;

const withoutPruning: KvChecker = (history, absentValue) =>
  checkKv(history, { absentValue, pruneUnknownWrites: false }).verdict;

/** How often each rule fired, and how often the histories have the shapes they are meant to. */
function shapes(options: RandomHistoryOptions, count: number, seed: number) {
  const tally = { dropped: 0, opaque: 0, bounded: 0, expiring: 0, unknownWrite: 0, failedCas: 0 };
  for (let i = 0; i < count; i++) {
    const history = randomKvHistory(historySeed(seed, i), options);
    const p = pruneUnknownWrites(
      history.filter((op) => op.output !== undefined || op.input.type !== 'get'),
    );
    if (p.dropped > 0) tally.dropped++;
    if (p.opaque > 0) tally.opaque++;
    if (p.bounded > 0) tally.bounded++;
    if (p.expiring > 0) tally.expiring++;
    if (history.some((op) => op.output === undefined)) tally.unknownWrite++;
    if (history.some((op) => op.output?.type === 'cas' && !op.output.ok)) tally.failedCas++;
  }
  return tally;
}

void describe('cross-check with unknown-outcome writes', () => {
  for (const [name, history] of [
    ['distinct values', DISTINCT],
    ['shared values', SHARED],
  ] as const) {
    void it(`pruned checker agrees with the oracle (${name})`, () => {
      const report = crossCheck({ count: UNKNOWN_WRITE_HISTORIES, seed: 20250101, history });
      assert.equal(report.disagreements, 0, explain(report));
      const share = (n: number): number => n / UNKNOWN_WRITE_HISTORIES;
      assert.ok(share(report.ok) >= VERDICT_SHARE_MIN, `only ${report.ok} linearizable`);
      assert.ok(share(report.illegal) >= VERDICT_SHARE_MIN, `only ${report.illegal} illegal`);
    });
  }

  void it('exercises every rule on histories with unknown writes and failed CASes', () => {
    const count = UNKNOWN_WRITE_HISTORIES;
    const tally = shapes(DISTINCT, count, 20250101);
    assert.ok(tally.unknownWrite >= count * SHAPE_SHARE_MIN, JSON.stringify(tally));
    assert.ok(tally.failedCas >= count * SHAPE_SHARE_MIN, JSON.stringify(tally));
    for (const rule of ['dropped', 'opaque', 'bounded', 'expiring'] as const) {
      assert.ok(tally[rule] >= count * RULE_SHARE_MIN, `${rule}: ${JSON.stringify(tally)}`);
    }
  });

  void it('unpruned checker agrees with the oracle too', () => {
    const report = crossCheck({ count: 5_000, seed: 5, history: DISTINCT, check: withoutPruning });
    assert.equal(report.disagreements, 0, explain(report));
  });
});

/** Unknown-outcome puts, as the search takes them (return at +∞, unknown gets left out). */
function asSearched(history: readonly KvOperation[]): KvOperation[] {
  return history
    .filter((op) => op.output !== undefined || op.input.type !== 'get')
    .map((op) => (op.output === undefined ? { ...op, return: Infinity } : op));
}

const isUnknownPut = (op: KvOperation): op is KvOperation & { input: { type: 'put' } } =>
  op.output === undefined && op.input.type === 'put';

/** Does a completed get, or a CAS that did not fail, see a value starting with `value`? */
function seen(history: readonly KvOperation[], value: string, absent: '' | null): boolean {
  return history.some((op) => {
    const observed =
      op.output?.type === 'get'
        ? op.output.value
        : op.input.type === 'cas' && !(op.output?.type === 'cas' && !op.output.ok)
          ? op.input.expected
          : null;
    return (observed ?? absent)?.startsWith(value) === true;
  });
}

void describe('planted pruning bugs are caught', () => {
  const PLANTED_HISTORIES = 20_000;
  // Rule 1 without (c): an unknown put nothing read is dropped even though a failed CAS may need
  // it to explain the failure.
  const dropIgnoringFailedCas: KvChecker = (history, absentValue) => {
    const ops = asSearched(history);
    const kept = ops.filter((op) => !(isUnknownPut(op) && !seen(ops, op.input.value, absentValue)));
    return checkKv(kept, { absentValue, pruneUnknownWrites: false }).verdict;
  };
  // Rule 3 without uniqueness: an unknown put is pinned to the first read of its value even when
  // another write could have produced that value.
  const boundWithoutUniqueness: KvChecker = (history, absentValue) => {
    const ops = asSearched(history).map((op) => {
      if (!isUnknownPut(op)) return op;
      const reads = history.filter(
        (r) => r.output?.type === 'get' && r.output.value === op.input.value && r.return >= op.call,
      );
      if (reads.length === 0) return op;
      return {
        ...op,
        output: { type: 'put' } as const,
        return: Math.min(...reads.map((r) => r.return)),
      };
    });
    return checkKv(ops, { absentValue, pruneUnknownWrites: false }).verdict;
  };
  const planted: [string, KvChecker, RandomHistoryOptions][] = [
    ['dropping unknown puts without looking at failed CASes', dropIgnoringFailedCas, DISTINCT],
    ['bounding unknown puts whose value is not unique', boundWithoutUniqueness, SHARED],
  ];
  for (const [name, check, history] of planted) {
    void it(name, () => {
      const report = crossCheck({ count: PLANTED_HISTORIES, seed: 3, history, check });
      assert.ok(report.disagreements > 0, `${name}: no disagreement in ${report.count} histories`);
    });
  }
});
