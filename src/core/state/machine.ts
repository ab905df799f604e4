// The contract between the replica loop and a replicated state machine. `apply` must be
// deterministic: every replica applies the same commands in the same order and must end in the
// same state with the same results (Raft §5, State Machine Safety).
import type { LogIndex } from '../base/units.js';

export interface StateMachine<Result> {
  /** Apply one committed command. Never throws for a well-formed command from the log. */
  apply(index: LogIndex, data: Uint8Array): Result;
  /** The whole state, for a Raft snapshot (§7). */
  snapshot(): Uint8Array;
  /** Replace the whole state with a snapshot's. */
  restore(data: Uint8Array): void;
  /** A digest of the state, to compare replicas in tests. */
  digest(): number;
}
