// The simulator's view of the etcd key space: EtcdMachine itself, plus the check that every entry
// it applies is a well-formed command. The machine answers a malformed entry with an error as data
// (a server must not crash on one), but only the leader's own encoder writes entries, so in the
// simulator one can only come from a bug below the state machine: a log entry damaged on disk or
// in transit. Failing at once names that bug instead of leaving it to a later check.
import { AssertionError } from '../core/base/assert.js';
import type { LogIndex } from '../core/base/units.js';
import {
  ERR_MALFORMED_COMMAND,
  type EtcdMachine,
  type EtcdResult,
} from '../core/state/etcd-machine.js';
import type { StateMachine } from '../core/state/machine.js';

export class WellFormedOnly implements StateMachine<EtcdResult> {
  constructor(readonly etcd: EtcdMachine) {}

  apply(index: LogIndex, data: Uint8Array): EtcdResult {
    const r = this.etcd.apply(index, data);
    if (r.type === 'error' && r.error === ERR_MALFORMED_COMMAND)
      throw new AssertionError(`entry ${index} is not a well-formed etcd command`);
    return r;
  }

  snapshot(): Uint8Array {
    return this.etcd.snapshot();
  }

  restore(data: Uint8Array): void {
    this.etcd.restore(data);
  }

  digest(): number {
    return this.etcd.digest();
  }
}
