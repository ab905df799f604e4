// An independent oracle for small kv histories: plain recursive search over every order of the
// operations that real time allows, with no memo table, no partitioning, no event list and its own
// copy of the kv semantics over a whole-map state. It is exponential and meant for histories of
// about eight operations, where it is the ground truth the fast checker is compared against
// (crosscheck.ts).

import { assert } from '../core/base/index.js';
import type { KvOperation, KvValue } from './history.js';

/** Histories longer than this would take the oracle too long (worst case n! orders). */
export const BRUTE_FORCE_OPS_MAX = 12;

export interface BruteForceOptions {
  /** What an absent key reads as; as in kvModel. Default null. */
  readonly absentValue?: '' | null | undefined;
}

/** True iff some real-time-respecting order of the history is a legal sequential kv execution. */
export function bruteForceLinearizable(
  history: readonly KvOperation[],
  options: BruteForceOptions = {},
): boolean {
  assert(history.length <= BRUTE_FORCE_OPS_MAX, () => `brute force: ${history.length} ops`);
  const absent: KvValue = options.absentValue ?? null;
  const placed = history.map(() => false);

  // An operation without an outcome may have happened or not; one without an output but a finite
  // return is treated the same way, as checkKv does.
  const mustHappen = (op: KvOperation): boolean => op.output !== undefined;
  const precedes = (a: KvOperation, b: KvOperation): boolean =>
    a.output !== undefined && a.return < b.call;

  const read = (store: ReadonlyMap<string, KvValue>, key: string): KvValue =>
    store.has(key) ? (store.get(key) as KvValue) : absent;
  const same = (a: KvValue, b: KvValue): boolean => (a ?? absent) === (b ?? absent);

  /** The store after `op`, or undefined if its recorded output is impossible in `store`. */
  function apply(
    store: ReadonlyMap<string, KvValue>,
    op: KvOperation,
  ): Map<string, KvValue> | undefined {
    const input = op.input;
    const out = op.output;
    const current = read(store, input.key);
    const after = new Map(store);
    if (input.type === 'get') {
      if (out !== undefined && out.type === 'get' && !same(out.value, current)) return undefined;
    } else if (input.type === 'put') {
      after.set(input.key, input.value);
    } else if (input.type === 'append') {
      after.set(input.key, (current === null ? '' : current) + input.value);
    } else if (input.type === 'delete') {
      after.set(input.key, absent);
    } else {
      const hit = same(input.expected, current);
      if (out !== undefined && out.type === 'cas' && out.ok !== hit) return undefined;
      if (hit) after.set(input.key, input.value);
    }
    return after;
  }

  function explore(store: ReadonlyMap<string, KvValue>): boolean {
    if (history.every((op, i) => placed[i] || !mustHappen(op))) return true;
    for (let i = 0; i < history.length; i++) {
      if (placed[i]) continue;
      const op = history[i] as KvOperation;
      // op may go next only if no other unplaced operation returned before op was called.
      const blocked = history.some((other, j) => !placed[j] && j !== i && precedes(other, op));
      if (blocked) continue;
      const after = apply(store, op);
      if (after === undefined) continue;
      placed[i] = true;
      const found = explore(after);
      placed[i] = false;
      if (found) return true;
    }
    return false;
  }

  return explore(new Map());
}
