// Differential testing of a checker against the brute-force oracle on random small histories
// (100,000 histories, zero disagreements, in crosscheck.test.ts). Each history has its own seed,
// printed with any disagreement so it can be replayed alone with randomKvHistory(seed).

import type { KvOperation } from './history.js';
import { bruteForceLinearizable } from './bruteforce.js';
import { checkKv } from './linearizability.js';
import type { Verdict } from './model.js';
import { randomKvHistory, type RandomHistoryOptions } from './random-history.js';

export type KvChecker = (history: readonly KvOperation[], absentValue: '' | null) => Verdict;

export interface CrossCheckOptions {
  /** How many random histories. */
  readonly count: number;
  /** Root seed; history i uses historySeed(seed, i). */
  readonly seed: number;
  /** The checker under test. Default: checkKv. */
  readonly check?: KvChecker | undefined;
  readonly history?: RandomHistoryOptions | undefined;
  /** How many disagreeing histories to keep in the report (all are counted). Default 5. */
  readonly examplesMax?: number | undefined;
  /** The clock for elapsedMs. Default performance.now(). */
  readonly now?: (() => number) | undefined;
}

export interface Disagreement {
  readonly seed: number;
  readonly absentValue: '' | null;
  readonly history: readonly KvOperation[];
  /** The oracle's verdict. */
  readonly expected: Verdict;
  readonly actual: Verdict;
}

export interface CrossCheckReport {
  readonly count: number;
  /** Histories the oracle found linearizable / not linearizable. */
  readonly ok: number;
  readonly illegal: number;
  readonly disagreements: number;
  readonly examples: readonly Disagreement[];
  readonly elapsedMs: number;
}

/** One in this many histories uses Porcupine's absent-is-"" convention. */
const EMPTY_STRING_ABSENT_EVERY = 4;

export function historySeed(rootSeed: number, index: number): number {
  return (rootSeed + Math.imul(index, 0x9e3779b9)) >>> 0;
}

export const defaultKvChecker: KvChecker = (history, absentValue) =>
  checkKv(history, { absentValue }).verdict;

export function crossCheck(options: CrossCheckOptions): CrossCheckReport {
  const now = options.now ?? (() => performance.now());
  const check = options.check ?? defaultKvChecker;
  const examplesMax = options.examplesMax ?? 5;
  const started = now();
  let ok = 0;
  let illegal = 0;
  let disagreements = 0;
  const examples: Disagreement[] = [];
  for (let i = 0; i < options.count; i++) {
    const seed = historySeed(options.seed, i);
    const absentValue = i % EMPTY_STRING_ABSENT_EVERY === 0 ? '' : null;
    const history = randomKvHistory(seed, { ...options.history, absentValue });
    const expected: Verdict = bruteForceLinearizable(history, { absentValue }) ? 'ok' : 'illegal';
    if (expected === 'ok') ok++;
    else illegal++;
    const actual = check(history, absentValue);
    if (actual !== expected) {
      disagreements++;
      if (examples.length < examplesMax) {
        examples.push({ seed, absentValue, history, expected, actual });
      }
    }
  }
  return {
    count: options.count,
    ok,
    illegal,
    disagreements,
    examples,
    elapsedMs: now() - started,
  };
}
