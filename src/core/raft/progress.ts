// The leader's view of one follower (etcd-raft's Progress; Raft thesis §10.2.1 on pipelining).
// probe: one append at a time until we find where the logs match; replicate: pipelined appends
// with a bounded inflight window; snapshot: waiting for an InstallSnapshot to land.
import { logIndex, type LogIndex } from '../base/units.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match: LogIndex = logIndex(0);
  next: LogIndex;
  state: ProgressState = 'probe';
  /** In probe state: an append was sent and we wait for its answer (or a heartbeat reply). */
  probeSent = false;
  /** In snapshot state: the index of the snapshot being sent. */
  pendingSnapshot: LogIndex = logIndex(0);
  /** Ticks since the pending snapshot was sent: it is re-sent if never acknowledged. */
  snapshotTicks = 0;
  /** The highest commit index sent to this follower, so it learns of new commits promptly. */
  sentCommit: LogIndex = logIndex(0);
  /** Heard from within the current election timeout (CheckQuorum, Raft thesis §6.2). */
  recentActive = false;
  /** Last index of each append in flight, oldest first. */
  private inflight: LogIndex[] = [];

  constructor(
    next: LogIndex,
    /** Appends in flight at most in replicate state. */
    private readonly inflightMax: number,
  ) {
    this.next = next;
  }

  becomeProbe(): void {
    if (this.state === 'snapshot') {
      this.next = logIndex(Math.max(this.match + 1, this.pendingSnapshot + 1));
    } else {
      this.next = logIndex(this.match + 1);
    }
    this.state = 'probe';
    this.probeSent = false;
    this.pendingSnapshot = logIndex(0);
    this.inflight = [];
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = logIndex(this.match + 1);
    this.probeSent = false;
    this.inflight = [];
  }

  becomeSnapshot(index: LogIndex): void {
    this.state = 'snapshot';
    this.pendingSnapshot = index;
    this.snapshotTicks = 0;
    this.inflight = [];
  }

  /** May the leader send another append now? */
  canSend(): boolean {
    switch (this.state) {
      case 'probe':
        return !this.probeSent;
      case 'replicate':
        return this.inflight.length < this.inflightMax;
      case 'snapshot':
        return false;
    }
  }

  /** Record an append that ends at `last` (replicate: optimistic next). */
  sentAppend(last: LogIndex, entries: number): void {
    if (this.state === 'replicate') {
      if (entries > 0) {
        this.next = logIndex(last + 1);
        this.inflight.push(last);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /** A successful append response up to `index`. Returns false if it was stale. */
  maybeUpdate(index: LogIndex): boolean {
    let updated = false;
    if (index > this.match) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    if (this.next < index + 1) this.next = logIndex(index + 1);
    while (this.inflight.length > 0 && (this.inflight[0] as number) <= index) this.inflight.shift();
    return updated;
  }

  /**
   * A rejection of an append at `rejected`; `probeNext` is where the hint says to try. Returns
   * false when the rejection is stale (answers an append we have already moved past).
   */
  maybeDecrTo(rejected: LogIndex, probeNext: LogIndex): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = logIndex(this.match + 1);
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = logIndex(Math.max(Math.min(rejected, probeNext), this.match + 1, 1));
    this.probeSent = false;
    return true;
  }
}
