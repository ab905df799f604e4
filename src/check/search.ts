// Wing & Gong's depth-first search for a linearization of one partition (Wing & Gong 1993, §4),
// with Lowe's memo table (Lowe 2017, §4). Repeatedly: take a pending call that precedes the first
// return still in the event list, apply it to the model, lift it out, and start again from the
// front; on reaching a return whose operation was never linearized, backtrack. Success is the
// moment no finite-return operation is left; unknown-outcome operations may stay unlinearized.
//
// Two prunings, both sound and complete:
// - An unknown-outcome operation that would leave the state unchanged is never linearized:
//   leaving it pending allows everything that linearizing it allows.
// - A read-only operation (Model.readOnly) that may go next and fits the current state is taken
//   at once, without branching: any linearization that places it later can move it to here,
//   since nothing pending must precede it and it changes no state. If that choice fails, the
//   configuration fails, so backtracking skips the alternatives at that depth ("forced" frames).
//   On histories with many concurrent reads this cuts the search by orders of magnitude.
//
// The search runs in slices of a given number of steps so that a caller can interleave the
// partitions of one history, as Porcupine runs them in parallel: an illegal partition is then
// found without first finishing a hard one.

import { assert } from '../core/base/index.js';
import { Bitset } from './bitset.js';
import { EventList } from './events.js';
import { MemoTable } from './memo.js';
import type { Model, Operation } from './model.js';

/** What blocked the deepest partial linearization of an illegal partition. */
export interface SearchFailure<State> {
  /** Length of the longest linearizable prefix the search found. */
  readonly depth: number;
  /** The operation whose return was reached without a place for it. */
  readonly blockedOp: number;
  /** The model state after that prefix. */
  readonly state: State;
  /** The last operations of that prefix, oldest first (at most a few, for context). */
  readonly lastOps: readonly number[];
}

export type SearchResult<State> =
  | { readonly verdict: 'ok' }
  | { readonly verdict: 'illegal'; readonly failure: SearchFailure<State> };

/** How many linearized operations a failure report quotes. */
const FAILURE_CONTEXT_OPS = 3;

// Where the loop is: at a configuration just reached (look for a read-only operation to force),
// scanning the candidates of the current configuration, or undoing the last linearization.
const FRESH = 0;
const SCAN = 1;
const BACKTRACK = 2;
type Phase = typeof FRESH | typeof SCAN | typeof BACKTRACK;

export class LinearizationSearch<State, Input, Output> {
  private readonly events: EventList;
  private readonly bits: Bitset;
  private readonly memo: MemoTable<State>;
  /** Operations with an unknown outcome (return at +∞): linearizing them is optional. */
  private readonly optional: boolean[];
  /** Completed operations the model calls read-only: candidates for forcing. */
  private readonly readOnly: boolean[];
  /** Finite-return operations not yet linearized. */
  private required: number;
  // The search stack: the call entry linearized at each depth, the state before it, and whether
  // it was forced (then its alternatives need not be tried).
  private readonly stackEntries: number[] = [];
  private readonly stackStates: State[] = [];
  private readonly stackForced: boolean[] = [];
  private state: State;
  private entry: number;
  private phase: Phase = FRESH;
  private failure: SearchFailure<State> | undefined;
  private result: SearchResult<State> | undefined;
  /** Loop iterations so far, across slices. */
  steps = 0;

  constructor(
    private readonly model: Model<State, Input, Output>,
    private readonly ops: readonly Operation<Input, Output>[],
  ) {
    this.events = new EventList(
      ops.map((o) => o.call),
      ops.map((o) => o.return),
    );
    this.bits = new Bitset(ops.length);
    this.memo = new MemoTable<State>((a, b) => model.equal(a, b));
    this.optional = ops.map((o) => o.return === Infinity);
    const readOnly = model.readOnly;
    this.readOnly = ops.map(
      (o) =>
        o.return !== Infinity && o.output !== undefined && readOnly?.(o.input, o.output) === true,
    );
    this.required = this.optional.reduce((count, opt) => (opt ? count : count + 1), 0);
    this.state = model.init();
    this.entry = this.events.first();
  }

  /** Entries in the memo table: the search's memory use, in configurations. */
  get memoEntries(): number {
    return this.memo.size;
  }

  /** Runs at most `stepsMax` more steps; the verdict once there is one, else undefined. */
  run(stepsMax: number): SearchResult<State> | undefined {
    if (this.result === undefined) this.result = this.advance(stepsMax);
    return this.result;
  }

  private advance(stepsMax: number): SearchResult<State> | undefined {
    const { model, ops, events, bits, optional } = this;
    for (let budget = stepsMax; budget > 0; budget--) {
      if (this.required === 0) return this.finish();
      this.steps++;
      if (this.phase === BACKTRACK) {
        if (this.pop()) continue;
        // Every backtrack starts at a return entry, which records a failure, or at a forced
        // configuration already explored, whose exploration recorded one.
        assert(this.failure !== undefined, 'search: illegal without a recorded failure');
        return { verdict: 'illegal', failure: this.failure };
      }
      if (this.phase === FRESH) {
        this.forceReadOnly();
        continue;
      }
      const entry = this.entry;
      // A finite-return operation is still pending, so its return entry lies ahead of `entry`.
      assert(entry !== events.tail, 'search: ran off the event list with operations pending');
      const op = events.op[entry] as number;
      if (events.isCall[entry] !== 1) {
        // A return reached before its operation was linearized: no pending call fits here.
        this.recordFailure(op);
        this.phase = BACKTRACK;
        continue;
      }
      // Read-only operations were all tried when this configuration was fresh, and none fit.
      if (this.readOnly[op] === true) {
        this.entry = events.next[entry] as number;
        continue;
      }
      const o = ops[op] as Operation<Input, Output>;
      const next = model.step(this.state, o.input, o.output);
      if (next !== undefined && !(optional[op] === true && model.equal(next, this.state))) {
        bits.add(op);
        if (this.memo.add((bits.hash ^ model.hash(next)) >>> 0, bits, next)) {
          this.push(entry, next, false);
          continue;
        }
        bits.remove(op);
      }
      this.entry = events.next[entry] as number;
    }
    return this.required === 0 ? this.finish() : undefined;
  }

  /**
   * At a new configuration: if a read-only operation may go next and fits, commit to it. If its
   * configuration was already explored (and so failed), this one fails too.
   */
  private forceReadOnly(): void {
    const { model, ops, events, bits } = this;
    for (let e = events.first(); events.isCall[e] === 1; e = events.next[e] as number) {
      const op = events.op[e] as number;
      if (this.readOnly[op] !== true) continue;
      const o = ops[op] as Operation<Input, Output>;
      const next = model.step(this.state, o.input, o.output);
      if (next === undefined) continue;
      assert(model.equal(next, this.state), 'search: a read-only operation changed the state');
      bits.add(op);
      if (this.memo.add((bits.hash ^ model.hash(next)) >>> 0, bits, next)) {
        this.push(e, next, true);
      } else {
        bits.remove(op);
        this.phase = BACKTRACK;
      }
      return;
    }
    this.entry = events.first();
    this.phase = SCAN;
  }

  /** Linearizes the operation of call entry `entry`, leading to state `next` (already in bits). */
  private push(entry: number, next: State, forced: boolean): void {
    const op = this.events.op[entry] as number;
    this.stackEntries.push(entry);
    this.stackStates.push(this.state);
    this.stackForced.push(forced);
    this.state = next;
    this.events.lift(entry);
    if (this.optional[op] !== true) this.required--;
    this.phase = FRESH;
  }

  /** Undoes the last linearization; false when there is none (the partition is illegal). */
  private pop(): boolean {
    const back = this.stackEntries.pop();
    if (back === undefined) return false;
    const op = this.events.op[back] as number;
    this.state = this.stackStates.pop() as State;
    const forced = this.stackForced.pop() as boolean;
    this.bits.remove(op);
    this.events.unlift(back);
    if (this.optional[op] !== true) this.required++;
    if (!forced) {
      // Try the next candidate after the one just undone.
      this.entry = this.events.next[back] as number;
      this.phase = SCAN;
    }
    return true;
  }

  private recordFailure(blockedOp: number): void {
    const depth = this.stackEntries.length;
    if (this.failure !== undefined && depth <= this.failure.depth) return;
    this.failure = {
      depth,
      blockedOp,
      state: this.state,
      lastOps: this.stackEntries
        .slice(-FAILURE_CONTEXT_OPS)
        .map((e) => this.events.op[e] as number),
    };
  }

  private finish(): SearchResult<State> {
    assert(
      this.ops.every((_, i) => this.optional[i] === true || this.bits.has(i)),
      'search: finished with a finite-return operation unlinearized',
    );
    return { verdict: 'ok' };
  }
}
