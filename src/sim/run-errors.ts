// What a run's members and observers report that fails the run: the first bug a member logged or
// an escaped rejection, and the first violation thrown inside a member, wherever its code caught
// it. The run checks both after every event.
import { AssertionError } from '../core/base/assert.js';
import { InvariantViolation } from './invariants.js';

export class RunErrors {
  /** The first bug a member reported in its log or an escaped rejection: fails the run. */
  private internalError: string | undefined;
  /** The first violation or assertion thrown inside a member, wherever it was caught. */
  private thrown: Error | undefined;

  report(what: string, err?: unknown): void {
    if (err instanceof InvariantViolation || err instanceof AssertionError) this.thrown ??= err;
    this.internalError ??= what;
  }

  /** Run an observer; a violation it throws fails the run even if the member's code catches it. */
  guard(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.thrown ??= e instanceof Error ? e : new Error(String(e));
      throw e;
    }
  }

  /** Throw what was reported since the run began, if anything. */
  rethrow(): void {
    if (this.thrown !== undefined) throw this.thrown;
    if (this.internalError !== undefined)
      throw new InvariantViolation('node-assertion', this.internalError);
  }
}
