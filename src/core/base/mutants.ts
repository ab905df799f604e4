// Planted bugs ("mutants"), each a realistic mistake in the code the simulator runs — the Raft
// core, the WAL, the member (leases, forwarding, the Lock service, watches) and the SDK's session
// rule — switched on only by the simulator's test-only option. They prove that the simulator and
// its checkers find such bugs: every one must be caught. Production code runs with none enabled.

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
  repeatUnknownWrite:
    'send a write again after an attempt whose outcome was unknown (applied twice: no dedup, thesis §6.3)',
  tornTailValid: 'accept a torn last WAL record as valid instead of truncating it',
  keepaliveUnconfirmed:
    "answer lease renewals from the leader's own state, unconfirmed, and count delivered ticks (the code before the fix)",
  leaseNoRefresh: 'a new leader expires leases by the old deadlines, without refreshing them first',
  checkpointRenewNoReset:
    'a renewal of a checkpointed lease is answered without first committing a reset (etcd #13491)',
  unknownAsRefusal:
    "answer a write whose outcome is unknown with a refusal ('leader changed'), as before the fix",
  forwardIgnoresDeadline:
    'the leader starts a forwarded request after the asker has given up on it',
  unlockUnfenced: 'Unlock deletes the key whatever revision created it (etcd #22082)',
  unlockFenceAfterBarrier:
    'Unlock fences its delete at the revision seen after a read barrier, not on arrival (the first fix)',
  watchResumeLate: 'a watch created at start_revision r delivers from r + 1',
  revokeMissesKey: 'a lease revoke leaves one of its attached keys behind',
  readBeforeApplied:
    'answer a linearizable read once its read index is known, before it is applied',
  sessionFromAnswer: "a lease holder dates its lease from the renewal's answer instead of its send",
  txnLessAsLessEqual: 'a txn compare LESS evaluated as less-or-equal',
  watchDropsFirstEvent: 'a watcher loses the first event of a revision that has several',
  prevKvAfterWrite: "a Put's prev_kv is the key-value it just wrote, not the one it replaced",
  rangeCountAfterLimit: "a Range's count is the number of keys it returned, after the limit",
  recreatedKeyKeepsVersion: 'a key put again after its deletion continues its old version count',
  txnReadsStale: "a read inside a txn does not see the txn's own earlier writes",
  deleteRangeEndInclusive: 'DeleteRange also deletes the key at range_end',
  ignoreLeaseDetaches: 'a Put with ignore_lease leaves the key without its lease',
  voteSyncedOnlyWithTerm:
    'a vote is synced only when the term changes too: granted in a term already persisted, it is sent before it is durable',
  staleAckLowersMatch: "a leader takes a stale append acknowledgement as the follower's match",
  termChangeNotSynced:
    'a new term taken without a vote (stepping down to a newer leader) is not synced before answering',
  rewriteNotSynced:
    'entries that rewrite indexes already written (after a conflict) are not synced before the acknowledgement',
  walReplayKeepsOverwritten:
    'WAL replay lets a rewritten index replace only itself, keeping the old entries after it',
  heartbeatCommitUnclamped: "a leader's heartbeat carries its commit index, not min(match, commit)",
  snapshotConfOfLast:
    'a snapshot carries the newest configuration, not the one in force at its index',
  answerByIndexOnly:
    'a proposal waits past a leader change and is answered by whatever entry was applied at its index',
  applyCorruptsValue:
    "a member keeps each put's value with its last byte changed: its key space differs",
  checkQuorumOff:
    'a leader that has not heard from a majority for an election timeout keeps leading (CheckQuorum lost)',
} as const;

export type MutantName = keyof typeof MUTANTS;
export const MUTANT_NAMES = Object.keys(MUTANTS) as MutantName[];

export type Mutants = ReadonlySet<MutantName>;
export const NO_MUTANTS: Mutants = new Set();
