// Every applied entry's answer, judged against the naive key space (keyspace-reference.ts): the
// first member to apply an index feeds the entry to the reference, and every member that applies
// that index, then or after a restart, must give the reference's answer. At the end of a run each
// revision's events in the simulator's event record must be the reference's. A difference fails
// the seed with the entry, both answers and the log index.
import type { Entry } from '../core/raft/types.js';
import type { EtcdLimits } from '../core/state/etcd-limits.js';
import type { EtcdResult } from '../core/state/etcd-machine.js';
import { decodeEtcdEntry } from '../replica/member/server-machine.js';
import type { RecordedEvent } from './event-reference.js';
import { InvariantViolation } from './invariants.js';
import { KeyspaceReference } from './keyspace-reference.js';

/** Answers longer than this are cut in messages. */
const SHOWN_CHARS_MAX = 600;

export class KeyspaceCheck {
  private readonly reference: KeyspaceReference;
  /** The next log index the reference needs; entries before it have their answers below. */
  private next = 1;
  private readonly answers = new Map<number, string>();
  /**
   * Set when an index was first applied out of order (only possible through a snapshot, which
   * carries no entries): the reference can no longer follow, and the check stops.
   */
  private lost = false;
  /** Entries judged, for the run's figures. */
  judged = 0;

  constructor(limits: EtcdLimits) {
    this.reference = new KeyspaceReference(limits);
  }

  /** Member `node` applied `e` and its machine answered `result`. */
  onApplied(node: number, e: Entry, result: unknown): void {
    if (this.lost) return;
    const index = e.index as number;
    if (index > this.next) {
      this.lost = true;
      return;
    }
    if (index === this.next) {
      this.next++;
      this.answers.set(index, this.feed(e, result));
    }
    const mine = this.answers.get(index);
    if (mine === undefined || mine === '') return;
    const theirs = this.machineText(e, result);
    this.judged++;
    if (theirs !== mine)
      throw new InvariantViolation(
        'keyspace-reference',
        `member ${node} answered entry ${index} (${describe(e)}) with ${cut(theirs)}; the ` +
          `reference key space answers ${cut(mine)}`,
      );
  }

  /** The reference's answer text for the entry, or '' when it does not judge this one. */
  private feed(e: Entry, result: unknown): string {
    if (e.type !== 'normal') return '';
    const cmd = decodeEtcdEntry(e.data);
    if (cmd === null || !isEtcdResult(result)) return '';
    const a = this.reference.apply(cmd, result);
    return a.kind === 'skip' ? '' : KeyspaceReference.text(a);
  }

  private machineText(e: Entry, result: unknown): string {
    if (e.type !== 'normal' || !isEtcdResult(result)) return '';
    return KeyspaceReference.text(KeyspaceReference.answerOf(result));
  }

  /** At the end of the run: each revision's recorded events are the reference's. */
  checkEvents(recorded: ReadonlyMap<number, readonly RecordedEvent[]>): void {
    if (this.lost) return;
    for (const [rev, events] of recorded) {
      const want = this.reference.events.get(rev);
      if (want === undefined) continue;
      const got = events.map(({ key, type, value, createRevision, lease }) => ({
        key,
        type,
        value,
        createRevision,
        lease,
      }));
      const a = JSON.stringify(got);
      const b = JSON.stringify(want);
      if (a !== b)
        throw new InvariantViolation(
          'keyspace-reference',
          `the events of revision ${rev} were ${cut(a)}; the reference key space made ${cut(b)}`,
        );
    }
  }
}

function isEtcdResult(r: unknown): r is EtcdResult {
  return (
    typeof r === 'object' && r !== null && 'type' in r && (r as { type: string }).type !== 'member'
  );
}

function describe(e: Entry): string {
  const cmd = decodeEtcdEntry(e.data);
  return cmd === null ? 'not a key-space command' : cmd.type;
}

function cut(s: string): string {
  return s.length > SHOWN_CHARS_MAX ? `${s.slice(0, SHOWN_CHARS_MAX)}…` : s;
}
