// The sequential specification a history is checked against, in Porcupine's shape: a partition
// function, an initial state, a step function, and state equality plus hashing for the memo table
// (Lowe 2017, §4). The model is deterministic: one legal next state per step, or none.

/**
 * One operation of a concurrent history. Intervals are closed: two operations whose call and
 * return times are equal count as concurrent, which is what a monotonic clock with coarse ticks
 * needs. `return === Infinity` marks an unknown outcome: the operation may take effect at any point
 * after its call, or never.
 */
export interface Operation<Input, Output> {
  readonly clientId: number;
  readonly input: Input;
  /** undefined when the outcome is unknown: the model must then accept any outcome. */
  readonly output: Output | undefined;
  readonly call: number;
  readonly return: number;
  /**
   * For an unknown-outcome operation: a time after which it can no longer change the state, so
   * that once an operation called after it has been linearized the search stops considering this
   * one. Only set it where that is proved (unknown-writes.ts); wrong, it makes the search
   * incomplete.
   */
  readonly expiresMs?: number | undefined;
}

export interface Model<State, Input, Output> {
  /**
   * The partition an operation belongs to. Checking each partition on its own is sound and
   * complete only when the specification is P-compositional (Horn & Kroening 2015, §3), as a
   * map of independent registers is. Omit it to check the history as one partition.
   */
  readonly partition?: ((input: Input) => string) | undefined;
  /** The state before the first operation of every partition. */
  init(): State;
  /**
   * The state after applying `input` with the observed `output`, or undefined when that output
   * is impossible in `state`. With `output === undefined` (unknown outcome) the model applies the
   * operation as it would have taken effect. Must not mutate `state`.
   */
  step(state: State, input: Input, output: Output | undefined): State | undefined;
  /**
   * Optional hint: true when every legal step of this operation leaves the state unchanged (a
   * read, a failed compare-and-set). The search then commits to such an operation as soon as it
   * is legal and may go next, without trying alternatives first: a read placed at the earliest
   * point where it fits loses no linearization. A wrong `true` is caught by an assertion.
   */
  readonly readOnly?: ((input: Input, output: Output) => boolean) | undefined;
  /**
   * Optional hint: a name for what an operation does, equal for two inputs only when they step
   * every state alike. Unknown-outcome operations with one name are interchangeable, so the search
   * places them in call order and tries only the first one not yet placed (search.ts).
   */
  readonly effectKey?: ((input: Input) => string) | undefined;
  /** Real equality, used inside a memo-table bucket; never a string comparison of a rendering. */
  equal(a: State, b: State): boolean;
  /** A 32-bit hash consistent with `equal`. */
  hash(state: State): number;
  /** The canonical text form of a state, for failure reports only. */
  describe(state: State): string;
  /** The canonical text form of one operation, for failure reports only. */
  describeOperation(input: Input, output: Output | undefined): string;
}

/** Linearizable, not linearizable, or the budget ran out first. */
export type Verdict = 'ok' | 'illegal' | 'unknown';

export interface CheckResult {
  readonly verdict: Verdict;
  /** How many partitions the history split into (all of them, checked or not). */
  readonly partitions: number;
  /** The partition found not linearizable. */
  readonly illegalKey?: string;
  /** Human-readable: which operation could not be placed, or why the verdict is unknown. */
  readonly detail?: string;
}
