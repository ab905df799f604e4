// Regression scripts: a shrunk failing schedule written as JSON under test/regressions/, replayed
// by the test suite forever after. A script recorded with a planted mutant must still fail with
// the same invariant (the simulator still catches that bug); one recorded without must now pass.
import type { MutantName } from '../core/base/mutants.js';
import { describeFault, type Schedule } from './schedule.js';
import type { InvariantName } from './invariants.js';

export interface RegressionScript {
  readonly name: string;
  /** What failed when it was recorded. */
  readonly invariant: InvariantName;
  readonly message: string;
  readonly mutants: readonly MutantName[];
  /** Human-readable faults, for review in diffs. */
  readonly faults: readonly string[];
  readonly schedule: Schedule;
}

export function makeRegression(
  name: string,
  schedule: Schedule,
  invariant: InvariantName,
  message: string,
  mutants: readonly MutantName[],
): RegressionScript {
  return {
    name,
    invariant,
    message,
    mutants,
    faults: schedule.faults.map(describeFault),
    schedule,
  };
}

export function formatRegression(r: RegressionScript): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
