// Simulated register clients. Each is sequential (one operation outstanding), talks to the members
// through their client API (api-channel.ts) with the SDK's failover rule (sim-client.ts), and
// records every operation for the linearizability checker: a write whose outcome never became
// known is recorded with no output and an infinite return, and its client takes a fresh history
// ID (Jepsen's rule: it may still be in flight); a write that failed definitely is left out (it
// must never take effect). Writers also compact old revisions now and then, as an operator would.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { KvInput, KvOperation } from '../check/history.js';
import { firstKv, KV, outputOf, requestFor, revisionOf, text } from './kv-requests.js';
import { call, Running, sleep, type ClientEnv } from './sim-client.js';

/** A writer compacts once the newest revision it has seen is this far past the last compaction. */
const COMPACT_EVERY_REVISIONS = 100;
/** Revisions of history kept below the newest seen when compacting. */
const COMPACT_KEEP_REVISIONS = 20;
/** Pause between a client's operations, in ms. */
const THINK_MS = { min: 0, max: 30 } as const;

export interface KvWorkloadOptions {
  readonly clients: number;
  /** Read-only clients, in addition to `clients`: each stays on the member that answers it. */
  readonly readers: number;
  readonly keys: number;
  readonly opTimeoutMs: number;
  /** A single read attempt is abandoned after this long and tried on another member. */
  readonly attemptTimeoutMs: number;
  /**
   * The last `patientClients` clients (readers first) wait `patientWaitMs` for an attempt and
   * for the operation, as long as real clients do: long enough for a paused or cut-off leader's
   * stale answer to reach a client still waiting for it.
   */
  readonly patientClients?: number;
  readonly patientWaitMs?: number;
}

interface KvClient {
  historyId: number;
  /** The member it sends to first: the last one that answered. */
  prefer: NodeId | undefined;
  readonly readOnly: boolean;
  readonly opTimeoutMs: number;
  readonly attemptTimeoutMs: number;
}

export class KvWorkload {
  readonly history: KvOperation[] = [];
  /** Values whose writes were acknowledged (each value is written once). */
  readonly acked = new Set<string>();
  /** Writes answered with a definite failure, by value: they must never take effect. */
  readonly refused = new Map<string, string>();
  private nextHistoryId = 0;
  private valueCounter = 0;
  private readonly running = new Running();
  private readonly revisionOfValue = new Map<string, number>();
  private revisionSeen = 0;
  private compactedTo = 0;

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly opts: KvWorkloadOptions,
  ) {}

  get idle(): boolean {
    return this.running.idle;
  }

  start(): void {
    const all = this.opts.clients + this.opts.readers;
    for (let c = 0; c < all; c++) {
      const patient = c >= all - (this.opts.patientClients ?? 0);
      const waitMs = this.opts.patientWaitMs ?? this.opts.opTimeoutMs;
      const client: KvClient = {
        historyId: this.nextHistoryId++,
        prefer: undefined,
        readOnly: c >= this.opts.clients,
        opTimeoutMs: patient ? Math.max(waitMs, this.opts.opTimeoutMs) : this.opts.opTimeoutMs,
        attemptTimeoutMs: patient ? waitMs : this.opts.attemptTimeoutMs,
      };
      void this.running.loop(() => this.loop(client));
    }
  }

  private async loop(client: KvClient): Promise<void> {
    await sleep(this.env, this.prng.int(0, 20));
    while (this.env.q.now < this.env.stopAtMs) {
      if (!client.readOnly && this.revisionSeen - this.compactedTo >= COMPACT_EVERY_REVISIONS)
        await this.compact(client);
      const input = client.readOnly
        ? this.getInput(this.prng.int(0, this.opts.keys))
        : this.randomInput();
      await this.run(client, input, client.opTimeoutMs);
      await sleep(this.env, this.prng.int(THINK_MS.min, THINK_MS.max));
    }
  }

  /** A fresh client's read of every key (after healing: each must finish). */
  async finalReads(timeoutMs: number): Promise<{ done: number; failed: number }> {
    const client: KvClient = {
      historyId: this.nextHistoryId++,
      prefer: undefined,
      readOnly: true,
      opTimeoutMs: timeoutMs,
      attemptTimeoutMs: this.opts.attemptTimeoutMs,
    };
    let done = 0;
    let failed = 0;
    for (let k = 0; k < this.opts.keys; k++) {
      if (await this.run(client, this.getInput(k), timeoutMs)) done++;
      else failed++;
    }
    return { done, failed };
  }

  /** Run one operation to an answer or give-up and record it; true if its outcome is known. */
  private async run(client: KvClient, input: KvInput, timeoutMs: number): Promise<boolean> {
    const modRevision =
      input.type === 'cas' && input.expected !== null && this.prng.chance(0.5)
        ? this.revisionOfValue.get(input.expected)
        : undefined;
    const req = requestFor(input, {
      asTxn: this.prng.chance(0.3),
      expectedModRevision: modRevision,
    });
    const start = this.env.q.now;
    const r = await call(this.env, this.prng, req.path, req.request, req.write, {
      timeoutMs,
      attemptTimeoutMs: client.attemptTimeoutMs,
      prefer: client.prefer,
    });
    if (r.ok) {
      client.prefer = r.node;
      const output = outputOf(input, r.response);
      this.learn(input, r.response);
      if (input.type === 'put' || (input.type === 'cas' && output.type === 'cas' && output.ok))
        this.acked.add(input.value);
      this.history.push({
        clientId: client.historyId,
        input,
        output,
        call: start,
        return: this.env.q.now,
      });
      return true;
    }
    client.prefer = undefined;
    if (input.type === 'get') return false; // a read that never got through tells nothing
    if (r.verdict === 'definite') {
      if ('value' in input) this.refused.set(input.value, describe(r.failure));
      return false;
    }
    this.history.push({
      clientId: client.historyId,
      input,
      output: undefined,
      call: start,
      return: Infinity,
    });
    client.historyId = this.nextHistoryId++;
    return false;
  }

  private async compact(client: KvClient): Promise<void> {
    this.compactedTo = this.revisionSeen - COMPACT_KEEP_REVISIONS;
    await call(this.env, this.prng, KV.compact, { revision: String(this.compactedTo) }, true, {
      timeoutMs: client.opTimeoutMs,
      attemptTimeoutMs: client.attemptTimeoutMs,
      prefer: client.prefer,
    });
  }

  key(i: number): string {
    return `k${i}`;
  }

  private getInput(i: number): KvInput {
    return { type: 'get', key: this.key(i) };
  }

  private randomInput(): KvInput {
    const key = this.key(this.prng.int(0, this.opts.keys));
    const value = `v${++this.valueCounter}`;
    const r = this.prng.next();
    if (r < 0.4) return { type: 'get', key };
    if (r < 0.7) return { type: 'put', key, value };
    if (r < 0.95) {
      const expected = this.prng.chance(0.3)
        ? null
        : `v${this.prng.int(Math.max(1, this.valueCounter - 5), this.valueCounter + 1)}`;
      return { type: 'cas', key, expected, value };
    }
    return { type: 'delete', key };
  }

  /** Remember the revisions an answer reveals, for mod-revision compares and compaction. */
  private learn(input: KvInput, response: Record<string, unknown>): void {
    const rev = revisionOf(response);
    if (rev > this.revisionSeen) this.revisionSeen = rev;
    if (input.type === 'get') {
      const kv = firstKv(response);
      if (kv) this.revisionOfValue.set(text(kv.value), Number(kv.mod_revision));
      return;
    }
    const wrote = input.type === 'put' || (input.type === 'cas' && response['succeeded'] === true);
    if (wrote) this.revisionOfValue.set(input.value, rev);
  }
}

function describe(f: { kind: string; details?: string }): string {
  return f.details !== undefined ? f.details : f.kind;
}
