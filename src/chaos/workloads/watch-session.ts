// One watch session on one member's raw Watch stream (etcd's rpc.proto, service Watch): a create
// request, then every event received, until the stream fails, the server cancels it, or we end
// it. The SDK's Watcher (src/client/watch.ts) resumes on its own and drops events older than its
// resume point, which would hide from the checker both the resumes and a server that re-sends
// events; here every (re)creation is its own recorded session, as src/check/watch-delivery.ts
// judges them, and the workload decides where and from which revision to resume.
import type { Connection } from '../../client/connection.js';
import { decodeHeader, decodeKeyValue, int64, type WireObject } from '../../client/codec.js';
import type { WatchEventRecord, WatchSession } from '../../check/watch-delivery.js';

/** What a session watches: the checker's key and range_end (undefined: the single key). */
export interface WatchRange {
  readonly key: string;
  readonly rangeEnd?: string;
}

export interface RecordedSession extends WatchSession {
  readonly endpoint: string;
  readonly openedMs: number;
  readonly endedMs: number;
  /** When the last event arrived (the session's opening if none did). */
  readonly lastEventMs: number;
  /** When each event arrived, by its index in events. */
  readonly eventMs: readonly number[];
  /** Whether the server answered `created`. */
  readonly created: boolean;
  /** Why it ended, for the report: the stream's error, the cancel reason, or 'ended by us'. */
  readonly why: string;
}

/** An event as received, with the value a put wrote (empty for a delete). */
export interface ReceivedEvent extends WatchEventRecord {
  readonly value: string;
}

/** The reason to abort a session with when it is still open as the recording stops. */
export const STILL_OPEN = 'still open';

/**
 * Watch `range` on `endpoint` from `startRevision` (0: from now) until `stop` aborts (the session
 * then ends 'canceled', or 'open' if aborted with STILL_OPEN) or the stream ends by itself
 * ('failed', or 'compacted' with the compact revision). `onEvents` sees each response's events.
 */
export function runSession(
  connection: Connection,
  endpoint: string,
  range: WatchRange,
  startRevision: number,
  stop: AbortSignal,
  onEvents: (events: readonly ReceivedEvent[]) => void = () => undefined,
): Promise<RecordedSession> {
  const openedMs = performance.now();
  const events: WatchEventRecord[] = [];
  let createdRevision = 0;
  let created = false;
  let lastEventMs = openedMs;
  const eventMs: number[] = [];
  return new Promise((resolve) => {
    let call: ReturnType<Connection['bidi']> | undefined;
    let done = false;
    const finish = (end: WatchSession['end'], why: string, compactRevision?: number): void => {
      if (done) return;
      done = true;
      stop.removeEventListener('abort', onStop);
      call?.cancel();
      resolve({
        startRevision,
        createdRevision,
        events,
        end,
        ...(compactRevision === undefined ? {} : { compactRevision }),
        endpoint,
        openedMs,
        endedMs: performance.now(),
        lastEventMs,
        eventMs,
        created,
        why,
      });
    };
    const onStop = (): void =>
      stop.reason === STILL_OPEN ? finish('open', STILL_OPEN) : finish('canceled', 'ended by us');
    if (stop.aborted) {
      onStop();
      return;
    }
    stop.addEventListener('abort', onStop, { once: true });
    try {
      // hasleader, as the SDK's watcher: a member without a leader ends the stream.
      call = connection.bidi('Watch.Watch', endpoint, true);
    } catch (e) {
      finish('failed', e instanceof Error ? e.message : String(e));
      return;
    }
    call.on('data', (w: WireObject) => {
      if (done) return;
      const header = decodeHeader(w.header);
      if (w.canceled === true) {
        const compact = int64(w.compact_revision);
        const reason = typeof w.cancel_reason === 'string' ? w.cancel_reason : 'canceled';
        if (compact > 0n) finish('compacted', `compacted at ${compact}`, Number(compact));
        else finish('failed', `canceled by the server: ${reason}`);
        return;
      }
      if (w.created === true) {
        created = true;
        createdRevision = Number(header.revision);
      }
      const wire = Array.isArray(w.events) ? (w.events as WireObject[]) : [];
      if (wire.length === 0) return;
      const batch = wire.map((e): ReceivedEvent => {
        const kv = decodeKeyValue(e.kv);
        return {
          revision: Number(kv.modRevision),
          key: kv.key.toString(),
          type: e.type === 'DELETE' ? 'delete' : 'put',
          value: kv.value.toString(),
        };
      });
      lastEventMs = performance.now();
      for (const { value: _, ...e } of batch) {
        events.push(e);
        eventMs.push(lastEventMs);
      }
      onEvents(batch);
    });
    call.on('error', (e: Error) => finish('failed', e.message));
    call.on('end', () => finish('failed', 'the stream ended'));
    call.write({
      create_request: {
        key: Buffer.from(range.key),
        ...(range.rangeEnd === undefined ? {} : { range_end: Buffer.from(range.rangeEnd) }),
        start_revision: `${startRevision}`,
        progress_notify: false,
        filters: [],
        prev_kv: false,
      },
    });
  });
}
