// Inserts: no acknowledged write lost, kill-all included. A few clients (each starting on a member
// of its own) put keys nobody else writes, each once with a value of its own, recording when every
// put was called and returned and what it was told: acknowledged at a revision, or unknown. Once
// the run is over and the cluster healed, one linearizable read (paged) takes back the whole
// prefix and src/check/lost-writes.ts judges it (Jepsen's etcd "set" test is the same idea).
import { connect, type Client } from '../../client/index.js';
import { checkLostWrites, type InsertAttempt, type ReadBack } from '../../check/lost-writes.js';
import { prefixEnd } from '../../client/codec.js';
import type { Timeline } from '../timeline.js';
import type { Workload, WorkloadContext, WorkloadResult } from './workload.js';
import type { Anomaly } from '../anomaly.js';

const prefix = 'chaos/inserts/';
/** One client per member: enough to spread the puts, cheap on 2 cores. */
const clientsPerMember = 1;
/** Each put's bound: past it the outcome is unknown. */
const callTimeoutMs = 3_000;
/** A pause between a client's puts, so the other workloads get the members too. */
const pauseMs = 5;
/** Keys per page of the read back. */
const pageKeys = 2_000;
/** The read back is retried this long (the cluster is ready, but a leader may still move). */
const readBackMs = 60_000;
/** Anomalies reported per kind; the last names how many more there were. */
const anomaliesPerKind = 3;

const keyName = (client: number, n: number): string =>
  `${prefix}${String(client).padStart(2, '0')}/${String(n).padStart(8, '0')}`;

export class InsertsWorkload implements Workload {
  readonly name = 'inserts';
  readonly #attempts: InsertAttempt[] = [];
  readonly #endpoints: readonly string[];
  readonly #timeline: Timeline;
  #read: ReadBack | undefined;
  #readError: string | undefined;

  constructor(ctx: WorkloadContext) {
    this.#endpoints = ctx.endpoints;
    this.#timeline = ctx.timeline;
  }

  get opsSoFar(): number {
    return this.#attempts.length;
  }

  async run(signal: AbortSignal): Promise<void> {
    const n = this.#endpoints.length * clientsPerMember;
    await Promise.all(Array.from({ length: n }, (_, c) => this.#client(c, signal)));
    try {
      this.#read = await readBack(this.#endpoints);
    } catch (e) {
      this.#readError = e instanceof Error ? e.message : String(e);
    }
  }

  async #client(c: number, signal: AbortSignal): Promise<void> {
    const eps = this.#endpoints;
    const rotated = eps.map((_, i) => eps[(c + i) % eps.length] as string);
    const client = await connect({ endpoints: rotated, defaultTimeoutMs: callTimeoutMs });
    try {
      for (let n = 0; !signal.aborted; n++) {
        const key = keyName(c, n);
        const value = `c${c}-n${n}`;
        const callMs = performance.now();
        const revision = await putOnce(client, key, value);
        const returnMs = revision === undefined ? Infinity : performance.now();
        this.#attempts.push({
          client: c,
          key,
          value,
          callMs,
          returnMs,
          ...(revision === undefined ? {} : { ackRevision: revision }),
        });
        await new Promise((r) => setTimeout(r, pauseMs));
      }
    } finally {
      await client.close();
    }
  }

  check(): WorkloadResult {
    const attempts = this.#attempts;
    const unknown = attempts.filter((a) => a.ackRevision === undefined).length;
    const base = { name: this.name, ops: attempts.length, unknown };
    const read = this.#read;
    if (read === undefined)
      return {
        ...base,
        verdict: 'undecided',
        detail: `the read back failed: ${this.#readError ?? 'not run'}`,
        anomalies: [],
      };
    const r = checkLostWrites(attempts, read);
    const detail =
      `${r.acknowledged} acknowledged; of ${unknown} unknown, ${r.unknownPresent} applied; ` +
      `${read.kvs.length} keys read back at revision ${read.revision}`;
    if (r.ok) return { ...base, verdict: 'ok', detail, anomalies: [] };
    const t = this.#timeline;
    const anomalies: Anomaly[] = [];
    const kinds = [...new Set(r.violations.map((v) => v.kind))];
    for (const kind of kinds) {
      const ofKind = r.violations.filter((v) => v.kind === kind).sort((a, b) => a.atMs - b.atMs);
      ofKind.slice(0, anomaliesPerKind).forEach((v, i, shown) => {
        const more =
          i === shown.length - 1 && ofKind.length > shown.length
            ? ` (${ofKind.length - shown.length} more ${kind} keys)`
            : '';
        const a = attempts.find((x) => x.key === v.key);
        anomalies.push({
          workload: this.name,
          kind,
          message: `${v.message}${more}`,
          atMs: Number.isFinite(v.atMs) ? v.atMs : read.atMs,
          excerpt:
            a === undefined
              ? []
              : [
                  `[${t.at(a.callMs)}, ${Number.isFinite(a.returnMs) ? t.at(a.returnMs) : 'open'}]` +
                    ` client ${a.client} put ${a.key} = ${a.value}: ` +
                    (a.ackRevision === undefined ? 'unknown' : `ok, revision ${a.ackRevision}`),
                ],
        });
      });
    }
    return { ...base, verdict: 'anomalies', detail, anomalies };
  }
}

/** The put's header revision, or undefined when it failed (its outcome is then unknown). */
async function putOnce(client: Client, key: string, value: string): Promise<number | undefined> {
  try {
    // Not aborted by the run's signal: each put is bounded by its timeout, and a listener per
    // call on one signal shared by every workload's clients would pile up.
    const r = await client.kv.put(key, value);
    return Number(r.header.revision);
  } catch {
    // Even a refusal is no proof the put was not applied (see register.ts): unknown.
    return undefined;
  }
}

/** The whole prefix at one revision: the first page fixes it, later pages read at it. */
async function readBack(endpoints: readonly string[]): Promise<ReadBack> {
  const client = await connect({ endpoints, defaultTimeoutMs: readBackMs });
  try {
    const kvs: ReadBack['kvs'][number][] = [];
    const end = prefixEnd(Buffer.from(prefix));
    let from = Buffer.from(prefix);
    let revision: bigint | undefined;
    for (;;) {
      const page = await client.kv.range(from, {
        rangeEnd: end,
        limit: pageKeys,
        sortOrder: 'ascend',
        sortTarget: 'key',
        ...(revision === undefined ? {} : { revision }),
      });
      revision ??= page.header.revision;
      for (const kv of page.kvs)
        kvs.push({
          key: kv.key.toString(),
          value: kv.value.toString(),
          createRevision: Number(kv.createRevision),
          modRevision: Number(kv.modRevision),
        });
      const last = page.kvs[page.kvs.length - 1];
      if (!page.more || last === undefined) break;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
    return { revision: Number(revision), atMs: performance.now(), kvs };
  } finally {
    await client.close();
  }
}
