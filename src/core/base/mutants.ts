// Planted bugs ("mutants"), each a known Raft mistake, switched on only by the simulator's
// test-only option. They prove that the simulator and its checkers can find such bugs
// (verification.md, "Bug-finding power"). Production code always runs with none enabled.

export const MUTANTS = {
  figure8: 'commit a previous-term entry by counting replicas (Raft §5.4.2, Figure 8)',
  voteIndexOnly: 'grant votes comparing last index only, not last term (§5.4.1)',
  voteNotPersisted: 'term and vote not persisted before answering',
  ackBeforeFsync: 'acknowledge appends before the WAL is synced',
  truncateOnStaleAppend: 'truncate the log on a stale or duplicated append',
  noNoopBeforeReads: "serve ReadIndex before the leader committed its term's no-op (§6.4)",
  readIndexNoConfirm: 'serve ReadIndex without confirming leadership with a quorum',
  applyBeforeCommit: 'apply entries before they are committed',
  commitBeyondMatch: 'advance the commit index past what a majority has matched',
  confChangeBeforeTermCommit: 'accept a config change before a current-term commit (thesis §4.1)',
  lostDuplicateDetection: 'apply a retried command twice (no client-session dedup, thesis §6.3)',
  tornTailValid: 'accept a torn last WAL record as valid instead of truncating it',
} as const;

export type MutantName = keyof typeof MUTANTS;
export const MUTANT_NAMES = Object.keys(MUTANTS) as MutantName[];

export type Mutants = ReadonlySet<MutantName>;
export const NO_MUTANTS: Mutants = new Set();
