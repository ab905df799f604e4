// The linearizability checker (Herlihy & Wing 1990): is there a total order of the operations,
// consistent with real time, that the sequential model accepts? Porcupine's design: split the
// history by partition (Horn & Kroening 2015), then search each part with Wing & Gong's algorithm
// (1993) and Lowe's memo table (2017). Partitions are searched in interleaved slices and the check
// stops at the first illegal one, so that one hard partition does not hide an easy illegal one.

import { assert } from '../core/base/index.js';
import type { KvOperation } from './history.js';
import { kvModel, type KvModelOptions } from './kv-model.js';
import type { CheckResult, Model, Operation } from './model.js';
import { partitionHistory, type Partition } from './partition.js';
import { LinearizationSearch, type SearchFailure } from './search.js';
import { pruneUnknownWrites } from './unknown-writes.js';

export interface CheckOptions {
  /**
   * Time budget for the whole history, in milliseconds of `now()`, read between slices of a few
   * thousand search steps. When it runs out the verdict is 'unknown'. Default: no limit.
   * Linearizability checking is NP-complete (Gibbons & Korach 1997), so a budget is the only
   * guarantee of termination on adversarial histories.
   */
  readonly timeoutMs?: number | undefined;
  /** The clock the budget is measured on. Default: `performance.now()`; inject one for tests. */
  readonly now?: (() => number) | undefined;
  /**
   * Memo-table entries, summed over partitions, before giving up with 'unknown'. Each entry holds
   * a copy of the linearized-set bitset plus a state, so this bounds memory. Default 2,000,000:
   * about 0.5 GB for partitions of a thousand operations, well under Node's default heap.
   */
  readonly memoEntriesMax?: number | undefined;
}

const MEMO_ENTRIES_MAX_DEFAULT = 2_000_000;
/**
 * Search steps each unfinished partition gets per round. Small enough that an easy illegal
 * partition is found within milliseconds whatever the others cost, large enough that switching
 * and reading the clock are noise.
 */
const SLICE_STEPS = 4096;

export function checkOperations<State, Input, Output>(
  model: Model<State, Input, Output>,
  ops: readonly Operation<Input, Output>[],
  options: CheckOptions = {},
): CheckResult {
  const now = options.now ?? (() => performance.now());
  const timeoutMs = options.timeoutMs ?? Infinity;
  const memoEntriesMax = options.memoEntriesMax ?? MEMO_ENTRIES_MAX_DEFAULT;
  assert(timeoutMs >= 0, () => `check: timeoutMs ${timeoutMs}`);
  const deadlineMs = now() + timeoutMs;
  for (const op of ops) {
    assert(
      Number.isFinite(op.call) && op.return >= op.call,
      () => `check: operation of client ${op.clientId} has call ${op.call}, return ${op.return}`,
    );
  }
  const parts = partitionHistory(model, ops);
  const searches: (LinearizationSearch<State, Input, Output> | undefined)[] = parts.map(
    (part) => new LinearizationSearch(model, part.ops),
  );
  // Round-robin over the unfinished partitions in slices, as if they ran in parallel (Porcupine
  // runs them in goroutines), so that one hard partition cannot hide an easy illegal one. Which
  // illegal partition is reported depends only on step counts, never on the clock.
  let active = parts.map((_, i) => i);
  /** Entries in the memo tables of unfinished searches; finished ones are released. */
  let memoEntries = 0;
  while (active.length > 0) {
    const stillActive: number[] = [];
    for (const [position, i] of active.entries()) {
      const search = searches[i];
      const part = parts[i];
      assert(search !== undefined && part !== undefined, 'check: partition already finished');
      const before = search.memoEntries;
      const result = search.run(SLICE_STEPS);
      memoEntries += search.memoEntries - before;
      if (result !== undefined && result.verdict === 'illegal') {
        return {
          verdict: 'illegal',
          partitions: parts.length,
          illegalKey: part.key,
          detail: describeFailure(model, part.key, part.ops, result.failure),
        };
      }
      if (result !== undefined) {
        memoEntries -= search.memoEntries;
        searches[i] = undefined;
        continue;
      }
      stillActive.push(i);
      const why =
        now() >= deadlineMs
          ? `the time budget of ${timeoutMs} ms ran out`
          : memoEntries > memoEntriesMax
            ? `the memo tables reached ${memoEntries} entries (limit ${memoEntriesMax})`
            : undefined;
      if (why !== undefined) {
        const open = [...stillActive, ...active.slice(position + 1)].map((j) => {
          const p = parts[j] as Partition<Input, Output>;
          return `${JSON.stringify(p.key)} (${p.ops.length} ops)`;
        });
        return {
          verdict: 'unknown',
          partitions: parts.length,
          detail: `${why} with ${open.length} of ${parts.length} partitions unfinished: ${open.join(', ')}`,
        };
      }
    }
    active = stillActive;
  }
  return { verdict: 'ok', partitions: parts.length };
}

function describeFailure<State, Input, Output>(
  model: Model<State, Input, Output>,
  key: string,
  ops: readonly Operation<Input, Output>[],
  failure: SearchFailure<State>,
): string {
  const describeOp = (i: number): string => {
    const o = ops[i] as Operation<Input, Output>;
    const ret = o.return === Infinity ? '∞' : String(o.return);
    return `client ${o.clientId} ${model.describeOperation(o.input, o.output)} [${o.call}, ${ret}]`;
  };
  const context =
    failure.lastOps.length === 0
      ? 'before any operation'
      : `after ${failure.depth} of ${ops.length} operations ` +
        `(${failure.depth > failure.lastOps.length ? '…; ' : ''}${failure.lastOps.map(describeOp).join('; ')})`;
  return (
    `partition ${JSON.stringify(key)}: ${describeOp(failure.blockedOp)} cannot be linearized; ` +
    `the longest linearizable prefix ends ${context} in state ${model.describe(failure.state)}`
  );
}

export interface KvCheckOptions extends CheckOptions, Omit<KvModelOptions, 'opaqueValue'> {
  /**
   * Settle unknown-outcome writes from the rest of the history before the search
   * (unknown-writes.ts): drop those nothing can have seen, make those only failed CASes could have
   * seen write an opaque value, give those that were seen their first observer's return time, and
   * retire unknown CASes whose expected value is gone for good. The verdict is the same either
   * way; only the time differs. Default true; false checks the history as recorded.
   */
  readonly pruneUnknownWrites?: boolean | undefined;
}

export interface KvCheckResult extends CheckResult {
  /** What pruning did to unknown-outcome writes (absent when it was switched off). */
  readonly pruned?: {
    readonly dropped: number;
    readonly opaque: number;
    readonly bounded: number;
    readonly expiring: number;
  };
}

/**
 * Checks a key-value history, one partition per key. A get with an unknown outcome constrains
 * nothing and is dropped (as etcd's robustness tests drop failed reads). Any operation without an
 * output is treated as returning at +∞: a write whose client gave up may still be applied later.
 */
export function checkKv(
  history: readonly KvOperation[],
  options: KvCheckOptions = {},
): KvCheckResult {
  const ops: KvOperation[] = [];
  for (const op of history) {
    if (op.output !== undefined) ops.push(op);
    else if (op.input.type !== 'get') ops.push({ ...op, return: Infinity });
  }
  const absentValue = options.absentValue ?? null;
  if (options.pruneUnknownWrites === false) {
    return checkOperations(kvModel({ absentValue }), ops, options);
  }
  const { history: pruned, opaqueValue, ...summary } = pruneUnknownWrites(ops, absentValue);
  const result = checkOperations(kvModel({ absentValue, opaqueValue }), pruned, options);
  const changed = summary.dropped + summary.opaque + summary.bounded > 0;
  if (result.detail === undefined || !changed) return { ...result, pruned: summary };
  // The failure names operations as pruning left them, so say what it did.
  const note =
    ` (before the search, ${summary.dropped} unknown-outcome writes were dropped, ` +
    `${summary.opaque} made to write an opaque value and ${summary.bounded} given their first ` +
    `observer's return time)`;
  return { ...result, detail: result.detail + note, pruned: summary };
}
