// Watches: every event once, in order, without gaps, from any start revision, across resumes.
// Writers (watch-writer.ts) put and delete keys under one prefix, some txns writing several keys
// in one revision; watchers on every member watch the prefix, a sub-range or one key from now
// or from a recent revision. Every few seconds a watcher's session is ended on purpose and
// resumed on the next member from the revision after the last event it was delivered (the SDK's
// rule, src/client/watch.ts), as after the nemesis' own disconnects; now and then a watcher is
// retired and a new one starts. Sessions are raw streams (watch-session.ts), so each (re)creation
// is recorded as the checker (src/check/watch-delivery.ts) judges it. After the run the
// reference is read (watch-reference.ts), the watchers are let catch up to it, and the checker
// judges them. Nothing compacts, so no session may end 'compacted'.
import { connect } from '../../client/index.js';
import { Connection } from '../../client/connection.js';
import { prefixEnd } from '../../client/codec.js';
import {
  checkWatchDelivery,
  keyInRange,
  type WatcherHistory,
  type WatchViolation,
} from '../../check/watch-delivery.js';
import type { Prng } from '../../core/base/prng.js';
import { sleep } from '../../launcher/poll.js';
import type { Anomaly } from '../anomaly.js';
import type { Timeline } from '../timeline.js';
import { buildReference, type Reference } from './watch-reference.js';
import {
  runSession,
  STILL_OPEN,
  type ReceivedEvent,
  type RecordedSession,
  type WatchRange,
} from './watch-session.js';
import { writeOnce, type WriteLog } from './watch-writer.js';
import type { Workload, WorkloadContext, WorkloadResult } from './workload.js';

const prefix = 'chaos/watches/';
const keys = Array.from({ length: 12 }, (_, k) => `${prefix}k${String(k).padStart(2, '0')}`);
/** Written once the writers have stopped: the reference watch reads up to it. */
const sentinelKey = `${prefix}~end`;
/** By watcher slot: the whole prefix twice, a sub-range, one key. */
const ranges: readonly WatchRange[] = [
  { key: prefix, rangeEnd: prefixEnd(Buffer.from(prefix)).toString() },
  { key: prefix, rangeEnd: prefixEnd(Buffer.from(prefix)).toString() },
  { key: keys[0] as string, rangeEnd: keys[6] as string },
  { key: keys[7] as string },
];
const writers = 2;
/** Each write's bound: past it the outcome is unknown. */
const callTimeoutMs = 3_000;
const writePauseMs = 15;
/** A session is ended on purpose after a time in this range. */
const sessionMsMin = 500;
const sessionMsMax = 5_000;
/** After a session, the chance its watcher is retired for a new one. */
const retireChance = 0.1;
/** A watcher from "a recent revision" starts up to this many revisions back. */
const recentRevisions = 500;
/** After a stream failed, before the next session. */
const failedPauseMs = 200;
/** After the writers stop, before the final reads: unknown writes still in flight land first. */
const settleMs = 1_000;
/** Hang guards for the final reads and for the watchers' catching up (not speed checks). */
const finalMs = 60_000;
const catchUpMs = 30_000;
const anomaliesPerKind = 3;
const excerptSessions = 12;

interface LiveWatcher {
  readonly id: number;
  readonly range: WatchRange;
  readonly initialStart: number;
  readonly sessions: RecordedSession[];
  /** The highest revision delivered by any session, 0 if none. */
  lastDelivered: number;
}

const pause = (ms: number, signal?: AbortSignal): Promise<void> =>
  sleep(ms, signal).catch(() => undefined);

const effectiveStart = (s: RecordedSession): number =>
  s.startRevision > 0 ? s.startRevision : s.createdRevision + 1;

export class WatchesWorkload implements Workload {
  readonly name = 'watches';
  readonly #endpoints: readonly string[];
  readonly #prng: Prng;
  readonly #timeline: Timeline;
  readonly #log: WriteLog = {
    acked: [],
    attemptedValues: new Set(),
    writes: 0,
    unknown: 0,
    latestRevision: 0,
  };
  readonly #watchers: LiveWatcher[] = [];
  /** The watcher each slot runs now. */
  readonly #current: LiveWatcher[] = [];
  #events = 0;
  #finishing = false;
  #reference: Reference | undefined;
  #referenceError: string | undefined;
  #stalled: { readonly watcher: LiveWatcher; readonly target: number }[] = [];

  constructor(ctx: WorkloadContext) {
    this.#endpoints = ctx.endpoints;
    this.#prng = ctx.prng;
    this.#timeline = ctx.timeline;
  }

  get opsSoFar(): number {
    return this.#log.writes + this.#events;
  }

  async run(signal: AbortSignal): Promise<void> {
    const connection = new Connection({
      endpoints: this.#endpoints,
      defaultTimeoutMs: callTimeoutMs,
      attemptTimeoutMs: callTimeoutMs,
    });
    const finish = new AbortController();
    const watching = ranges.map((_, s) => this.#slot(s, connection, finish.signal));
    try {
      await Promise.all(Array.from({ length: writers }, (_, i) => this.#writer(i, signal)));
      this.#finishing = true;
      try {
        this.#reference = await this.#final(connection);
        await this.#catchUp(this.#reference);
      } catch (e) {
        this.#referenceError = e instanceof Error ? e.message : String(e);
      }
    } finally {
      finish.abort(STILL_OPEN);
      await Promise.all(watching);
      connection.close();
    }
  }

  async #writer(i: number, signal: AbortSignal): Promise<void> {
    const eps = this.#endpoints;
    const rotated = eps.map((_, j) => eps[(i + j) % eps.length] as string);
    const client = await connect({ endpoints: rotated, defaultTimeoutMs: callTimeoutMs });
    const prng = this.#prng.fork(`writer-${i}`);
    try {
      for (let n = 0; !signal.aborted; n++) {
        await writeOnce(client, keys, prng, (j) => `w${i}-${n}-${j}`, this.#log);
        await pause(writePauseMs);
      }
    } finally {
      await client.close();
    }
  }

  #newWatcher(slot: number, prng: Prng): LiveWatcher {
    const latest = this.#log.latestRevision;
    const initialStart =
      prng.next() < 0.5 || latest === 0 ? 0 : Math.max(1, latest - prng.int(0, recentRevisions));
    const w: LiveWatcher = {
      id: this.#watchers.length,
      range: ranges[slot] as WatchRange,
      initialStart,
      sessions: [],
      lastDelivered: 0,
    };
    this.#watchers.push(w);
    this.#current[slot] = w;
    return w;
  }

  /** Where a watcher's next session starts: right after what it was delivered. */
  #resumeFrom(w: LiveWatcher): number {
    if (w.lastDelivered > 0) return w.lastDelivered + 1;
    const created = w.sessions.find((s) => s.created);
    return created === undefined ? w.initialStart : effectiveStart(created);
  }

  async #slot(slot: number, connection: Connection, finish: AbortSignal): Promise<void> {
    const prng = this.#prng.fork(`watcher-slot-${slot}`);
    // host:port, as the raw streams take them.
    const eps = connection.endpoints.all;
    await pause(prng.int(0, 2_000), finish);
    let w = this.#newWatcher(slot, prng);
    for (let k = 0; !finish.aborted; k++) {
      const endpoint = eps[(slot + k) % eps.length] as string;
      const end = new AbortController();
      const timer = setTimeout(() => end.abort('on purpose'), prng.int(sessionMsMin, sessionMsMax));
      const onFinish = (): void => end.abort(STILL_OPEN);
      finish.addEventListener('abort', onFinish, { once: true });
      const watcher = w;
      const s = await runSession(
        connection,
        endpoint,
        watcher.range,
        this.#resumeFrom(watcher),
        end.signal,
        (events) => {
          this.#events += events.length;
          for (const e of events)
            watcher.lastDelivered = Math.max(watcher.lastDelivered, e.revision);
        },
      );
      clearTimeout(timer);
      finish.removeEventListener('abort', onFinish);
      if (s.created || s.events.length > 0) w.sessions.push(s);
      if (s.end === 'failed') await pause(failedPauseMs, finish);
      // Nothing compacts; should something, a new watcher is the way on (the checker flags it).
      if (s.end === 'compacted' || (!this.#finishing && prng.next() < retireChance))
        w = this.#newWatcher(slot, prng);
    }
  }

  /**
   * The final reads: a linearizable Range of the prefix, then the sentinel put, then a watch
   * from revision 1 up to the sentinel on one member after another until one serves it whole.
   */
  async #final(connection: Connection): Promise<Reference> {
    await pause(settleMs);
    const client = await connect({ endpoints: this.#endpoints, defaultTimeoutMs: finalMs });
    try {
      const range = await client.kv.range(prefix, { prefix: true });
      const finalRange = {
        revision: Number(range.header.revision),
        kvs: range.kvs.map((kv) => ({
          key: kv.key.toString(),
          value: kv.value.toString(),
          modRevision: Number(kv.modRevision),
        })),
      };
      let sentinel: number | undefined;
      for (let n = 0; sentinel === undefined; n++) {
        const value = `sentinel-${n}`;
        this.#log.attemptedValues.add(value);
        try {
          const r = await client.kv.put(sentinelKey, value, { timeoutMs: callTimeoutMs });
          sentinel = Number(r.header.revision);
          const event: ReceivedEvent = { revision: sentinel, key: sentinelKey, type: 'put', value };
          this.#log.acked.push({ revision: sentinel, events: [event], atMs: performance.now() });
        } catch (e) {
          if (n >= 10) throw e;
        }
      }
      const watched = await this.#watchFromOne(connection, sentinel);
      return buildReference(
        watched,
        this.#log.acked,
        this.#log.attemptedValues,
        finalRange,
        performance.now(),
      );
    } finally {
      await client.close();
    }
  }

  async #watchFromOne(connection: Connection, upTo: number): Promise<ReceivedEvent[]> {
    const range = ranges[0] as WatchRange;
    for (let k = 0; k < this.#endpoints.length * 2; k++) {
      const eps = connection.endpoints.all;
      const endpoint = eps[k % eps.length] as string;
      const got: ReceivedEvent[] = [];
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort('too slow'), finalMs);
      await runSession(connection, endpoint, range, 1, stop.signal, (events) => {
        got.push(...events);
        if (events.some((e) => e.revision >= upTo)) stop.abort(STILL_OPEN);
      });
      clearTimeout(timer);
      if (got.some((e) => e.revision >= upTo)) return got.filter((e) => e.revision <= upTo);
    }
    throw new Error(`no member delivered a watch from revision 1 up to revision ${upTo}`);
  }

  /** Wait until every slot's watcher has been delivered the last reference event of its range. */
  async #catchUp(reference: Reference): Promise<void> {
    // Each target once: the reference of a long run has hundreds of thousands of events.
    const targets = this.#current.map((watcher) => ({
      watcher,
      target: reference.events
        .filter((e) => keyInRange(e.key, watcher.range.key, watcher.range.rangeEnd))
        .reduce((m, e) => Math.max(m, e.revision), 0),
    }));
    const behind = (): { watcher: LiveWatcher; target: number }[] =>
      targets.filter(({ watcher, target: t }) => {
        const created = watcher.sessions.find((s) => s.created);
        if (created === undefined) return true;
        return Math.max(watcher.lastDelivered, effectiveStart(created) - 1) < t;
      });
    const deadline = performance.now() + catchUpMs;
    while (behind().length > 0 && performance.now() < deadline) await pause(100);
    this.#stalled = behind();
  }

  check(): WorkloadResult {
    const base = { name: this.name, ops: this.opsSoFar, unknown: this.#log.unknown };
    const reference = this.#reference;
    const sessions = this.#watchers.reduce((n, w) => n + w.sessions.length, 0);
    const failed = this.#watchers.reduce(
      (n, w) => n + w.sessions.filter((s) => s.end === 'failed').length,
      0,
    );
    const about =
      `${this.#log.writes} writes (${this.#log.acked.length} acknowledged with events), ` +
      `${this.#watchers.length} watchers, ${sessions} sessions (${failed} ended by a fault)`;
    if (reference === undefined)
      return {
        ...base,
        verdict: 'undecided',
        detail: `${about}; no reference: ${this.#referenceError ?? 'not read'}`,
        anomalies: [],
      };
    const histories: WatcherHistory[] = this.#watchers.map((w) => ({
      watcher: w.id,
      key: w.range.key,
      ...(w.range.rangeEnd === undefined ? {} : { rangeEnd: w.range.rangeEnd }),
      sessions: w.sessions,
    }));
    const r = checkWatchDelivery(histories, reference.events);
    const anomalies: Anomaly[] = [
      ...reference.problems.map((p) => this.#anomaly('reference', p.message, p.atMs, [])),
      ...this.#stalled.map(({ watcher, target }) =>
        this.#anomaly(
          'stalled',
          `watcher ${watcher.id} was delivered up to revision ${watcher.lastDelivered}, not ` +
            `${target}, ${catchUpMs / 1000} s after the writes ended`,
          performance.now(),
          this.#excerpt(watcher, watcher.sessions.length - 1),
        ),
      ),
      ...this.#violations(r.violations),
    ];
    const detail = `${about}, ${r.eventsChecked} events delivered, ${reference.events.length} in the reference`;
    return {
      ...base,
      verdict: anomalies.length > 0 ? 'anomalies' : 'ok',
      detail,
      anomalies,
    };
  }

  #violations(violations: readonly WatchViolation[]): Anomaly[] {
    const out: Anomaly[] = [];
    for (const kind of new Set(violations.map((v) => v.kind))) {
      const ofKind = violations.filter((v) => v.kind === kind);
      ofKind.slice(0, anomaliesPerKind).forEach((v, i, shown) => {
        const w = this.#watchers[v.watcher] as LiveWatcher;
        const s = w.sessions[v.session] as RecordedSession;
        const more =
          i === shown.length - 1 && ofKind.length > shown.length
            ? ` (${ofKind.length - shown.length} more ${kind} violations)`
            : '';
        const atMs =
          kind === 'resume' ? s.openedMs : kind === 'gap' ? this.#gapSeenMs(w, s) : s.lastEventMs;
        out.push(this.#anomaly(kind, `${v.message}${more}`, atMs, this.#excerpt(w, v.session)));
      });
    }
    return out;
  }

  /** When a gap showed: the first event past the first reference event the session missed. */
  #gapSeenMs(w: LiveWatcher, s: RecordedSession): number {
    const got = new Set(s.events.map((e) => `${e.revision} ${e.key}`));
    const last = s.events.reduce((m, e) => Math.max(m, e.revision), 0);
    const missed = (this.#reference?.events ?? []).find(
      (e) =>
        e.revision >= effectiveStart(s) &&
        e.revision <= last &&
        keyInRange(e.key, w.range.key, w.range.rangeEnd) &&
        !got.has(`${e.revision} ${e.key}`),
    );
    if (missed === undefined) return s.lastEventMs;
    const i = s.events.findIndex((e) => e.revision >= missed.revision);
    return s.eventMs[i] ?? s.lastEventMs;
  }

  #anomaly(kind: string, message: string, atMs: number, excerpt: string[]): Anomaly {
    return { workload: this.name, kind, message, atMs, excerpt };
  }

  /** The watcher's sessions up to `upTo`, one line each. */
  #excerpt(w: LiveWatcher, upTo: number): string[] {
    const t = this.#timeline;
    return w.sessions.slice(Math.max(0, upTo + 1 - excerptSessions), upTo + 1).map((s) => {
      const i = w.sessions.indexOf(s);
      const first = s.events[0]?.revision;
      const last = s.events[s.events.length - 1]?.revision;
      const from = s.startRevision > 0 ? `from ${s.startRevision}` : 'from now';
      const got =
        first === undefined
          ? 'no events'
          : `${s.events.length} events, revisions ${first}..${last}`;
      return (
        `[${t.at(s.openedMs)}, ${t.at(s.endedMs)}] session ${i} on ${s.endpoint} ${from} ` +
        `(created at ${s.createdRevision}): ${got}; ${s.end} (${s.why})`
      );
    });
  }
}
