// The reference the watchers are judged against: every event the store committed under the
// prefix, in commit order. It is read after the run by a watch from revision 1 on one member,
// which serves it from the store's history (the catch-up path, not the live publish path most
// watchers use), and it is not trusted alone: it must agree with what the writers were told
// (an acknowledged write's revision holds exactly the events its ops made: a put always, a
// delete when it deleted something; etcd's mvcc records each txn as one revision) and the state
// it implies at the revision of a linearizable Range of the prefix, read just before the run's
// last write (a sentinel put the watch reads up to), must be what that Range read. Where an
// acknowledged write disagrees, its own events replace the revision's (the writer's answer is
// the stronger evidence) and the disagreement is reported.
import type { WatchEventRecord } from '../../check/watch-delivery.js';
import type { ReceivedEvent } from './watch-session.js';

/** A write the writers saw acknowledged, with the events it made, in its ops' order. */
export interface AckedWrite {
  readonly revision: number;
  readonly events: readonly ReceivedEvent[];
  /** When it was acknowledged, on the run's clock. */
  readonly atMs: number;
}

export interface FinalKv {
  readonly key: string;
  readonly value: string;
  readonly modRevision: number;
}

/** A linearizable Range of the prefix, read before the last event of the reference. */
export interface FinalRange {
  readonly revision: number;
  readonly kvs: readonly FinalKv[];
}

export interface ReferenceProblem {
  readonly atMs: number;
  readonly message: string;
}

export interface Reference {
  readonly events: readonly WatchEventRecord[];
  readonly problems: readonly ReferenceProblem[];
}

/** Problems quoted; the rest are counted in the last one. */
const problemsMax = 6;

export function buildReference(
  watched: readonly ReceivedEvent[],
  acked: readonly AckedWrite[],
  attemptedValues: ReadonlySet<string>,
  finalRange: FinalRange,
  endMs: number,
): Reference {
  const problems: ReferenceProblem[] = [];
  const byRevision = groupWatched(watched, endMs, problems);
  const replaced = new Set<number>();
  for (const w of acked) {
    const seen = byRevision.get(w.revision) ?? [];
    if (sameEvents(seen, w.events)) continue;
    problems.push({
      atMs: w.atMs,
      message:
        `revision ${w.revision}: acknowledged as ${list(w.events)}, but the watch from ` +
        `revision 1 gave ${seen.length === 0 ? 'nothing' : list(seen)}`,
    });
    byRevision.set(w.revision, w.events);
    replaced.add(w.revision);
  }
  for (const [revision, events] of byRevision) {
    if (replaced.has(revision)) continue;
    for (const e of events)
      if (e.type === 'put' && !attemptedValues.has(e.value))
        problems.push({
          atMs: endMs,
          message: `revision ${revision}: the watch from revision 1 gave a put of ${e.key} = ${e.value}, which no writer wrote`,
        });
  }
  const revisions = [...byRevision.keys()].sort((a, b) => a - b);
  const events = revisions.flatMap((r) => byRevision.get(r) ?? []);
  compareState(events, finalRange, endMs, problems);
  const shown = problems.slice(0, problemsMax);
  if (problems.length > shown.length) {
    const last = shown[shown.length - 1] as ReferenceProblem;
    shown[shown.length - 1] = {
      ...last,
      message: `${last.message} (and ${problems.length - shown.length} more)`,
    };
  }
  return {
    events: events.map(({ revision, key, type }) => ({ revision, key, type })),
    problems: shown,
  };
}

/** The watched events by revision; out of order or repeated ones are reported and dropped. */
function groupWatched(
  watched: readonly ReceivedEvent[],
  endMs: number,
  problems: ReferenceProblem[],
): Map<number, readonly ReceivedEvent[]> {
  const byRevision = new Map<number, readonly ReceivedEvent[]>();
  let last = 0;
  for (const e of watched) {
    const group = [...(byRevision.get(e.revision) ?? [])];
    if (e.revision < last || group.some((g) => g.key === e.key)) {
      problems.push({
        atMs: endMs,
        message: `the watch from revision 1 gave ${e.type} ${e.key} at revision ${e.revision} after revision ${last}`,
      });
      continue;
    }
    last = e.revision;
    group.push(e);
    byRevision.set(e.revision, group);
  }
  return byRevision;
}

function sameEvents(a: readonly ReceivedEvent[], b: readonly ReceivedEvent[]): boolean {
  const id = (e: ReceivedEvent): string => `${e.type} ${e.key} ${e.type === 'put' ? e.value : ''}`;
  const as = a.map(id).sort();
  const bs = b.map(id).sort();
  return as.length === bs.length && as.every((x, i) => x === bs[i]);
}

/** The state the reference implies at the final Range's revision must be what it read. */
function compareState(
  events: readonly ReceivedEvent[],
  finalRange: FinalRange,
  endMs: number,
  problems: ReferenceProblem[],
): void {
  const state = new Map<string, FinalKv>();
  for (const e of events) {
    if (e.revision > finalRange.revision) break;
    if (e.type === 'delete') state.delete(e.key);
    else state.set(e.key, { key: e.key, value: e.value, modRevision: e.revision });
  }
  const read = new Map(finalRange.kvs.map((kv) => [kv.key, kv]));
  const keys = [...new Set([...state.keys(), ...read.keys()])].sort();
  for (const key of keys) {
    const want = state.get(key);
    const got = read.get(key);
    if (want?.value === got?.value && want?.modRevision === got?.modRevision) continue;
    problems.push({
      atMs: endMs,
      message:
        `${key}: the events imply ${describeKv(want)} at revision ${finalRange.revision}, ` +
        `the Range at that revision read ${describeKv(got)}`,
    });
  }
}

function describeKv(kv: FinalKv | undefined): string {
  return kv === undefined ? 'no key' : `${kv.value} at revision ${kv.modRevision}`;
}

function list(events: readonly ReceivedEvent[]): string {
  return events.map((e) => `${e.type} ${e.key}`).join(', ');
}
