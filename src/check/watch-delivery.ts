// The watch guarantees, checked on what watchers received against every event the store
// committed. etcd promises (API guarantees, "Watch APIs": ordered, unique, reliable, resumable):
// a watcher sees the events of its range in revision order, never one twice, with no gap in the
// revisions it has covered, and a watcher resumed from the revision after the last one it saw
// continues the same stream. Four checks, each reported on its own:
// - order: within a session, events strictly follow the reference's order (revision ascending,
//   and within a revision, a txn or a lease revoke deleting several keys, the reference's order);
//   an event seen twice in a session is a duplicate;
// - exists: every delivered event is in the reference (same revision, key and type), in the
//   watcher's range, and not before the session's start revision;
// - gaps: every reference event in the range between the session's effective start and the last
//   revision it delivered was delivered (the effective start is startRevision if > 0, else the
//   revision after the `created` response's header, where a watch from "now" begins, as etcd's
//   server/storage/mvcc/watchable_store.go sets it);
// - resume: across a watcher's sessions, no event is delivered twice, and a session that resumes
//   after others delivered events covers every event after their last one. A resume that starts
//   later than that is reported only if it actually skipped events of the range: etcd's client
//   resumes from the last header revision it saw, progress notifications included
//   (client/v3/watch.go), which may lie past the last event. A session ended by compaction, and
//   the sessions after it, need not cover revisions below its compact revision: those events are
//   gone.

import { assert } from '../core/base/index.js';

export interface WatchEventRecord {
  readonly revision: number;
  readonly key: string;
  readonly type: 'put' | 'delete';
}

/** One watcher created on a stream (etcd WatchCreateRequest), until it ended. */
export interface WatchSession {
  /** As requested; 0 means "from the next revision after creation". */
  readonly startRevision: number;
  /** The header revision of the `created` response. */
  readonly createdRevision: number;
  /** In the order received. */
  readonly events: readonly WatchEventRecord[];
  readonly end: 'open' | 'canceled' | 'compacted' | 'failed';
  /** When end is 'compacted'. */
  readonly compactRevision?: number;
}

/** One logical watcher: a key or range, and its sessions in order (a resume opens a new session). */
export interface WatcherHistory {
  readonly watcher: number;
  readonly key: string;
  /** Exclusive end of the range, as etcd's range_end: undefined = the single key; '\u0000' = every key >= key. */
  readonly rangeEnd?: string;
  readonly sessions: readonly WatchSession[];
}

export type WatchViolationKind = 'order' | 'duplicate' | 'exists' | 'gap' | 'resume';

export interface WatchViolation {
  readonly kind: WatchViolationKind;
  readonly watcher: number;
  /** The session's index in the watcher's sessions. */
  readonly session: number;
  /** The whole violation in one line: which watcher and session, which events, which revisions. */
  readonly message: string;
}

export interface WatchCheckResult {
  readonly ok: boolean;
  readonly violations: readonly WatchViolation[];
  readonly watchersChecked: number;
  readonly eventsChecked: number;
}

/** Events quoted in one message; the rest are counted. */
const QUOTED_EVENTS_MAX = 4;
/** etcd's range_end for "every key from key on". */
const TO_THE_END = '\u0000';

export function checkWatchDelivery(
  watchers: readonly WatcherHistory[],
  reference: readonly WatchEventRecord[],
): WatchCheckResult {
  const index = new ReferenceIndex(reference);
  const violations: WatchViolation[] = [];
  let eventsChecked = 0;
  for (const w of watchers) {
    violations.push(...checkWatcher(w, index));
    for (const s of w.sessions) eventsChecked += s.events.length;
  }
  return {
    ok: violations.length === 0,
    violations,
    watchersChecked: watchers.length,
    eventsChecked,
  };
}

/** The reference events with their positions in commit order, by (revision, key). */
class ReferenceIndex {
  private readonly positionOf = new Map<string, number>();
  /** First position of each revision and beyond, for slicing by revision. */
  private readonly revisions: number[];

  constructor(readonly events: readonly WatchEventRecord[]) {
    events.forEach((e, i) => {
      const previous = events[i - 1];
      assert(
        previous === undefined || previous.revision <= e.revision,
        () => `watch reference: revision ${e.revision} after ${previous?.revision}`,
      );
      const id = eventId(e);
      assert(!this.positionOf.has(id), () => `watch reference: ${id} twice`);
      this.positionOf.set(id, i);
    });
    this.revisions = events.map((e) => e.revision);
  }

  /** The position of the reference event with this revision and key, if there is one. */
  position(e: WatchEventRecord): number | undefined {
    return this.positionOf.get(eventId(e));
  }

  /** The reference events with revision in [fromRevision, toRevision], in commit order. */
  between(fromRevision: number, toRevision: number): readonly WatchEventRecord[] {
    return this.events.slice(
      firstIndex(this.revisions, (r) => r >= fromRevision),
      firstIndex(this.revisions, (r) => r > toRevision),
    );
  }
}

/** What the sessions before the current one delivered: the logical stream so far. */
interface Stream {
  /** Reference positions delivered. */
  readonly delivered: Set<number>;
  /** The latest revision delivered, 0 if none. */
  lastRevision: number;
  /** Revisions below this were compacted away before a session ended 'compacted'. */
  compactedBelow: number;
}

/** What one session delivered of the reference. */
interface Delivery {
  readonly delivered: ReadonlySet<number>;
  readonly lastRevision: number;
}

type Report = (kind: WatchViolationKind, what: string) => void;

function checkWatcher(w: WatcherHistory, index: ReferenceIndex): WatchViolation[] {
  const out: WatchViolation[] = [];
  const inRange = (key: string): boolean => keyInRange(key, w.key, w.rangeEnd);
  const stream: Stream = { delivered: new Set(), lastRevision: 0, compactedBelow: 0 };
  w.sessions.forEach((session, s) => {
    const report: Report = (kind, what) => {
      const message = `${where(w, session, s)}: ${what}`;
      out.push({ kind, watcher: w.watcher, session: s, message });
    };
    const delivery = deliveries(session, index, inRange, stream, report);
    gaps(session, index, inRange, stream, delivery, report);
    if (s > 0) resumeSkips(session, index, inRange, stream, report);
    for (const p of delivery.delivered) stream.delivered.add(p);
    stream.lastRevision = Math.max(stream.lastRevision, delivery.lastRevision);
    if (session.end === 'compacted') {
      stream.compactedBelow = Math.max(stream.compactedBelow, session.compactRevision ?? 0);
    }
  });
  return out;
}

/** Order, duplicates and existence of each event of a session, in the order received. */
function deliveries(
  session: WatchSession,
  index: ReferenceIndex,
  inRange: (key: string) => boolean,
  stream: Stream,
  report: Report,
): Delivery {
  const start = effectiveStart(session);
  const delivered = new Set<number>();
  let lastPosition = -1;
  let lastRevision = 0;
  for (const e of session.events) {
    const position = index.position(e);
    const ref = position === undefined ? undefined : index.events[position];
    if (position === undefined || ref?.type !== e.type) {
      const was = ref === undefined ? '' : ` (it was a ${ref.type})`;
      report('exists', `${describe(e)} is not in the reference${was}`);
      continue;
    }
    if (!inRange(e.key)) report('exists', `${describe(e)} is outside the range`);
    if (e.revision < start) report('exists', `${describe(e)} is before the start, ${start}`);
    if (delivered.has(position)) {
      report('duplicate', `${describe(e)} delivered twice`);
      continue;
    }
    const previous = index.events[lastPosition];
    if (position < lastPosition && previous !== undefined) {
      report('order', `${describe(e)} came after ${describe(previous)}`);
    }
    if (stream.delivered.has(position)) {
      report('resume', `${describe(e)} re-delivered: an earlier session delivered it`);
    }
    delivered.add(position);
    lastPosition = Math.max(lastPosition, position);
    lastRevision = Math.max(lastRevision, e.revision);
  }
  return { delivered, lastRevision };
}

/**
 * Every event in range from the session's start to the last revision it delivered must have
 * been delivered; revisions below a compaction that ended this or an earlier session are exempt.
 */
function gaps(
  session: WatchSession,
  index: ReferenceIndex,
  inRange: (key: string) => boolean,
  stream: Stream,
  delivery: Delivery,
  report: Report,
): void {
  const compactedBelow = session.end === 'compacted' ? (session.compactRevision ?? 0) : 0;
  const from = Math.max(effectiveStart(session), compactedBelow, stream.compactedBelow);
  const missed = index
    .between(from, delivery.lastRevision)
    .filter((r) => inRange(r.key) && !delivery.delivered.has(index.position(r) as number));
  if (missed.length > 0) {
    report('gap', `missed ${quote(missed)} between revisions ${from} and ${delivery.lastRevision}`);
  }
}

/**
 * A resumed session must cover the events after the last one the earlier sessions delivered: if
 * it starts later, the events of the range it skipped were lost.
 */
function resumeSkips(
  session: WatchSession,
  index: ReferenceIndex,
  inRange: (key: string) => boolean,
  stream: Stream,
  report: Report,
): void {
  const start = effectiveStart(session);
  if (stream.lastRevision === 0 || start <= stream.lastRevision + 1) return;
  const from = Math.max(stream.lastRevision + 1, stream.compactedBelow);
  const skipped = index
    .between(from, start - 1)
    .filter((r) => inRange(r.key) && !stream.delivered.has(index.position(r) as number));
  if (skipped.length === 0) return;
  report(
    'resume',
    `resumed at revision ${start} after revision ${stream.lastRevision} was delivered, ` +
      `skipping ${quote(skipped)}`,
  );
}

/** Where a session's own coverage starts. */
function effectiveStart(session: WatchSession): number {
  return session.startRevision > 0 ? session.startRevision : session.createdRevision + 1;
}

/** etcd's range semantics, with keys compared as strings (the keys are ASCII: byte order). */
export function keyInRange(key: string, from: string, rangeEnd: string | undefined): boolean {
  if (rangeEnd === undefined) return key === from;
  if (rangeEnd === TO_THE_END) return key >= from;
  return key >= from && key < rangeEnd;
}

function eventId(e: WatchEventRecord): string {
  return `${e.revision} ${e.key}`;
}

function describe(e: WatchEventRecord): string {
  return `${e.type} ${JSON.stringify(e.key)} at revision ${e.revision}`;
}

function quote(events: readonly WatchEventRecord[]): string {
  const shown = events.slice(0, QUOTED_EVENTS_MAX).map(describe).join(', ');
  const more =
    events.length > QUOTED_EVENTS_MAX ? ` and ${events.length - QUOTED_EVENTS_MAX} more` : '';
  return `${events.length} event${events.length === 1 ? '' : 's'} (${shown}${more})`;
}

function where(w: WatcherHistory, session: WatchSession, s: number): string {
  const range =
    w.rangeEnd === undefined
      ? JSON.stringify(w.key)
      : w.rangeEnd === TO_THE_END
        ? `${JSON.stringify(w.key)} and after`
        : `[${JSON.stringify(w.key)}, ${JSON.stringify(w.rangeEnd)})`;
  const from =
    session.startRevision > 0
      ? `from revision ${session.startRevision}`
      : `from now (created at revision ${session.createdRevision})`;
  return `watcher ${w.watcher} on ${range}, session ${s} ${from}`;
}

/** The first index where the monotone `past` holds, or the length. */
function firstIndex(sorted: readonly number[], past: (revision: number) => boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (past(sorted[mid] as number)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
