// Simulated watchers, as an etcd client watches: a Watch stream to one member on the register keys'
// prefix, with `hasleader` set (so a member that loses its leader ends the stream, as Go's
// WithRequireLeader asks), resumed on another member from the revision after the last event it
// delivered whenever the stream ends or goes quiet — the resume every etcd client implements.
// Everything each watcher received is recorded, session by session, for the watch delivery checker.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { WatchSession, WatcherHistory, WatchEventRecord } from '../check/watch-delivery.js';
import type { ClientStream } from './api-channel.js';
import { bytes, text } from './kv-requests.js';
import { Running, sleep, type ClientEnv } from './sim-client.js';

export const WATCH_PATH = '/etcdserverpb.Watch/Watch';
const REQUIRE_LEADER: ReadonlyMap<string, string> = new Map([['hasleader', 'true']]);

/** The register keys' prefix and its range end (etcd's prefix range: the next byte up). */
const PREFIX = 'k';
const PREFIX_END = 'l';

interface MutableSession {
  readonly startRevision: number;
  createdRevision: number;
  readonly events: WatchEventRecord[];
  end: WatchSession['end'];
  compactRevision?: number;
}

interface WireEvent {
  readonly type?: unknown;
  readonly kv?: { readonly key?: unknown; readonly mod_revision?: unknown };
}

export interface WatchWorkloadOptions {
  readonly watchers: number;
  /** A stream with nothing received for this long is given up and resumed elsewhere, in ms. */
  readonly quietMs: number;
}

export class WatchWorkload {
  private readonly watchers: { readonly id: number; readonly sessions: MutableSession[] }[] = [];
  private readonly running = new Running();

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly opts: WatchWorkloadOptions,
  ) {}

  get idle(): boolean {
    return this.running.idle;
  }

  start(): void {
    for (let w = 0; w < this.opts.watchers; w++) void this.running.loop(() => this.loop(w));
  }

  history(): WatcherHistory[] {
    return this.watchers.map((w) => ({
      watcher: w.id,
      key: PREFIX,
      rangeEnd: PREFIX_END,
      // A session that was never created (its stream broke first) promised nothing.
      sessions: w.sessions
        .filter((s) => s.createdRevision > 0)
        .map((s) => ({
          startRevision: s.startRevision,
          createdRevision: s.createdRevision,
          events: s.events,
          end: s.end,
          ...(s.compactRevision !== undefined ? { compactRevision: s.compactRevision } : {}),
        })),
    }));
  }

  private async loop(id: number): Promise<void> {
    const w = { id, sessions: [] as MutableSession[] };
    this.watchers.push(w);
    let next = 0; // 0: from now; else the revision after the last delivered event
    await sleep(this.env, this.prng.int(0, 100));
    while (this.env.q.now < this.env.stopAtMs) {
      const members = this.env.members();
      const node = members[this.prng.int(0, members.length)] as NodeId;
      const s: MutableSession = {
        startRevision: next,
        createdRevision: 0,
        events: [],
        end: 'open',
      };
      w.sessions.push(s);
      await this.session(node, s);
      const last = s.events[s.events.length - 1];
      if (last !== undefined) next = last.revision + 1;
      // Compacted past what we need: start over from the compaction (the gap is acknowledged).
      if (s.end === 'compacted' && s.compactRevision !== undefined) next = s.compactRevision;
      // Nothing delivered: go on from where this one was created.
      if (last === undefined && next === 0 && s.createdRevision > 0) next = s.createdRevision + 1;
      await sleep(this.env, this.prng.int(5, 40));
    }
  }

  /** One stream until it ends, goes quiet, or the run stops. */
  private session(node: NodeId, s: MutableSession): Promise<void> {
    return new Promise((resolve) => {
      const holder: { stream?: ClientStream } = {};
      let lastHeardMs = this.env.q.now;
      let done = false;
      const finish = (end: WatchSession['end']): void => {
        if (done) return;
        done = true;
        if (s.end === 'open') s.end = end;
        holder.stream?.cancel();
        resolve();
      };
      const stream = this.env.channel.bidi(
        node,
        WATCH_PATH,
        {
          onResponse: (resp) => {
            lastHeardMs = this.env.q.now;
            if (resp['created'] === true) {
              s.createdRevision = Number(
                (resp['header'] as { revision?: unknown } | undefined)?.revision ?? 0,
              );
            }
            const events = resp['events'];
            if (Array.isArray(events)) {
              for (const e of events as WireEvent[]) {
                s.events.push({
                  revision: Number(e.kv?.mod_revision ?? 0),
                  key: text(e.kv?.key),
                  type: e.type === 'DELETE' ? 'delete' : 'put',
                });
              }
            }
            if (resp['canceled'] === true) {
              const compact = Number(resp['compact_revision'] ?? 0);
              if (compact > 0) {
                s.end = 'compacted';
                s.compactRevision = compact;
              } else s.end = 'canceled';
              finish(s.end);
            }
          },
          onEnd: () => finish('failed'),
        },
        REQUIRE_LEADER,
      );
      holder.stream = stream;
      stream.send({
        create_request: {
          key: bytes(PREFIX),
          range_end: bytes(PREFIX_END),
          start_revision: String(s.startRevision),
        },
      });
      const check = (): void => {
        if (done) return;
        if (this.env.q.now >= this.env.stopAtMs) finish('open');
        else if (this.env.q.now - lastHeardMs >= this.opts.quietMs) finish('failed');
        else void sleep(this.env, this.opts.quietMs / 4).then(check);
      };
      void sleep(this.env, this.opts.quietMs / 4).then(check);
    });
  }
}
