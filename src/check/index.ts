// The public surface of tenure/check: history types, the linearizability checker and its KV model,
// the Porcupine corpus parser, the brute-force oracle, random histories and the benchmark, and the
// checkers of the authority layer: the lease contract, lock exclusion and watch delivery.

export type * from './history.js';
export type { CheckResult, Model, Operation, Verdict } from './model.js';
export { checkKv, checkOperations } from './linearizability.js';
export type { CheckOptions, KvCheckOptions, KvCheckResult } from './linearizability.js';
export { pruneUnknownWrites } from './unknown-writes.js';
export type { UnknownWritePruning } from './unknown-writes.js';
export { describeKvOperation, describeKvValue, kvModel } from './kv-model.js';
export type { KvModelOptions } from './kv-model.js';
export { partitionHistory } from './partition.js';
export type { Partition } from './partition.js';
export { checkPorcupineKv, parsePorcupineKv, PorcupineParseError } from './porcupine.js';
export {
  defaultPorcupineDir,
  findRepoRoot,
  loadPorcupineKvCorpus,
  PorcupineCorpusError,
} from './porcupine-corpus.js';
export type { PorcupineKvCase } from './porcupine-corpus.js';
export { formatKvJsonl, KvHistoryParseError, parseKvJsonl } from './jsonl.js';
export { BRUTE_FORCE_OPS_MAX, bruteForceLinearizable } from './bruteforce.js';
export type { BruteForceOptions } from './bruteforce.js';
export { randomKvHistory } from './random-history.js';
export type { RandomHistoryOptions } from './random-history.js';
export { crossCheck, defaultKvChecker, historySeed } from './crosscheck.js';
export type { CrossCheckOptions, CrossCheckReport, Disagreement, KvChecker } from './crosscheck.js';
export { linearizableKvHistory, runBench } from './bench.js';
export type { BenchOptions, BenchReport, LinearizableHistoryOptions } from './bench.js';

// The authority layer's contracts: leases, locks, watches.
export {
  checkLeaseContract,
  DRIFT_RATIO_DEFAULT,
  LeasePromises,
  leasePromisedUntilMs,
} from './lease-contract.js';
export type {
  LeaseCheckOptions,
  LeaseCheckResult,
  LeaseHistory,
  LeaseLoss,
  LeasePromise,
  LeaseRenewal,
  LeaseRevocation,
  LeaseViolation,
} from './lease-contract.js';
export { checkLockExclusion } from './lock-exclusion.js';
export type {
  LockCheckResult,
  LockHold,
  LockViolation,
  LockViolationKind,
} from './lock-exclusion.js';
export { checkWatchDelivery, keyInRange } from './watch-delivery.js';
export type {
  WatchCheckResult,
  WatcherHistory,
  WatchEventRecord,
  WatchSession,
  WatchViolation,
  WatchViolationKind,
} from './watch-delivery.js';

// Building blocks of the search, for tools that drive it directly (one partition at a time).
export { LinearizationSearch } from './search.js';
export type { SearchFailure, SearchResult } from './search.js';
export { EventList, NO_ENTRY } from './events.js';
export { Bitset } from './bitset.js';
export { MemoTable } from './memo.js';
