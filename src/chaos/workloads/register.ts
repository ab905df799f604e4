// Registers: a few keys, each read, written and compare-and-set by several clients, every
// operation recorded with its call and return time on the run's clock, then judged by the
// linearizability checker of src/check (checkKv, Porcupine's kv model; Kingsbury's Knossos
// "register" workload in Jepsen's etcd tests is the same idea). A write whose outcome is unknown
// (UnknownOutcomeError, the client's deadline, the run's end) is recorded without an output and
// its client continues as a new logical client, since the old one still has that write open
// (Jepsen's process model: a crashed process is never reused). The keys change every few hundred
// operations, as Jepsen's independent keys do: a key's history stays small enough for the search
// however long the run (one key with 83,000 operations ran out of a 2-minute budget).
import { compare, connect, op, type Client } from '../../client/index.js';
import { checkKv } from '../../check/linearizability.js';
import { describeKvOperation } from '../../check/kv-model.js';
import type { KvInput, KvOperation, KvOutput, KvValue } from '../../check/history.js';
import type { Prng } from '../../core/base/prng.js';
import type { Timeline } from '../timeline.js';
import type { Workload, WorkloadContext, WorkloadResult } from './workload.js';
import { earliestFailure } from './earliest-failure.js';

const clientsPerMember = 2;
/** Keys in use at a time, and operations over all of them before the next set. */
const keys = 3;
const opsPerKeySet = 1_500;
/** Each call's bound: past it a write's outcome is unknown and a read failed. */
const callTimeoutMs = 3_000;
/** The checker's budget for the whole history. */
const checkBudgetMs = 120_000;
/** Lines of the failing prefix quoted in a report. */
const excerptOps = 16;

const keyName = (set: number, k: number): string => `chaos/register/${set}/${k}`;

export class RegisterWorkload implements Workload {
  readonly name = 'register';
  readonly #history: KvOperation[] = [];
  readonly #endpoints: readonly string[];
  readonly #prng: Prng;
  readonly #timeline: Timeline;
  #nextLogical = 0;
  #values = 0;

  constructor(ctx: WorkloadContext) {
    this.#endpoints = ctx.endpoints;
    this.#prng = ctx.prng;
    this.#timeline = ctx.timeline;
  }

  get opsSoFar(): number {
    return this.#history.length;
  }

  async run(signal: AbortSignal): Promise<void> {
    const n = this.#endpoints.length * clientsPerMember;
    await Promise.all(Array.from({ length: n }, (_, c) => this.#client(c, signal)));
  }

  async #client(c: number, signal: AbortSignal): Promise<void> {
    // Each client starts on a member of its own, so every member serves some of them.
    const eps = this.#endpoints;
    const rotated = eps.map((_, i) => eps[(c + i) % eps.length] as string);
    const client = await connect({ endpoints: rotated, defaultTimeoutMs: callTimeoutMs });
    const prng = this.#prng.fork(`register-client-${c}`);
    let logical = this.#nextLogical++;
    /** The last value this client saw per key, which its compare-and-sets expect. */
    const seen = new Map<string, KvValue>();
    try {
      while (!signal.aborted) {
        const key = keyName(Math.floor(this.#history.length / opsPerKeySet), prng.int(0, keys));
        const r = prng.next();
        const input: KvInput =
          r < 0.4
            ? { type: 'get', key }
            : r < 0.75
              ? { type: 'put', key, value: `v${this.#values++}` }
              : { type: 'cas', key, expected: seen.get(key) ?? null, value: `v${this.#values++}` };
        const call = performance.now();
        const output = await perform(client, input, signal);
        const ret = performance.now();
        this.#history.push({
          clientId: logical,
          input,
          output,
          call,
          return: output === undefined ? Infinity : ret,
        });
        if (output === undefined) {
          if (input.type !== 'get') logical = this.#nextLogical++;
          continue;
        }
        if (output.type === 'get') seen.set(key, output.value);
        else if (input.type === 'put') seen.set(key, input.value);
        else if (input.type === 'cas' && output.type === 'cas' && output.ok)
          seen.set(key, input.value);
      }
    } finally {
      await client.close();
    }
  }

  check(): WorkloadResult {
    const history = this.#history;
    const unknown = history.filter((o) => o.output === undefined).length;
    const base = { name: this.name, ops: history.length, unknown };
    const r = checkKv(history, { timeoutMs: checkBudgetMs });
    if (r.verdict === 'ok') return { ...base, verdict: 'ok', anomalies: [] };
    if (r.verdict === 'unknown')
      return {
        ...base,
        verdict: 'undecided',
        ...(r.detail ? { detail: r.detail } : {}),
        anomalies: [],
      };
    const key = r.illegalKey ?? '';
    const ofKey = history.filter((o) => o.input.key === key).sort((a, b) => a.call - b.call);
    const atMs = earliestFailure(ofKey);
    const seenThen = ofKey.filter((o) => o.call <= atMs);
    const t = this.#timeline;
    const excerpt = seenThen.slice(-excerptOps).map((o) => {
      const open = o.return > atMs;
      const what = describeKvOperation(o.input, open ? undefined : o.output);
      return `[${t.at(o.call)}, ${open ? 'open' : t.at(o.return)}] client ${o.clientId} ${what}`;
    });
    return {
      ...base,
      verdict: 'anomalies',
      anomalies: [
        {
          workload: this.name,
          kind: 'linearizability',
          message:
            `key ${key}: not linearizable, already in the ${seenThen.length} of its ` +
            `${ofKey.length} operations called by ${t.at(atMs)}. ${r.detail ?? ''}`,
          atMs: Number.isFinite(atMs) ? atMs : performance.now(),
          excerpt,
        },
      ],
    };
  }
}

async function perform(
  client: Client,
  input: KvInput,
  signal: AbortSignal,
): Promise<KvOutput | undefined> {
  try {
    switch (input.type) {
      case 'get': {
        const kv = await client.kv.get(input.key, { signal });
        return { type: 'get', value: kv === undefined ? null : kv.value.toString() };
      }
      case 'put':
        await client.kv.put(input.key, input.value, { signal });
        return { type: 'put' };
      case 'cas': {
        const guard =
          input.expected === null
            ? compare.createRevision(input.key, '=', 0n)
            : compare.value(input.key, '=', input.expected);
        const r = await client.kv
          .txn()
          .if(guard)
          .then(op.put(input.key, input.value))
          .commit({ signal });
        return { type: 'cas', ok: r.succeeded };
      }
      default:
        return undefined;
    }
  } catch {
    // A read that failed constrains nothing; a write that failed may still be applied (the SDK
    // refuses only what never left this process, and even a refusal is no proof here): unknown.
    return undefined;
  }
}
