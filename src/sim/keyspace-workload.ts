// Simulated clients that use the whole etcd key space, not one register per key: Puts with
// prev_kv, ignore_value, ignore_lease and a lease of their own; DeleteRange over single keys,
// ranges, prefixes and "from key"; Txns whose compares look at every target with every result
// around the revisions they have seen, whose branches read (limit, sort, count_only, keys_only,
// past revisions, min/max filters), write and nest; and compactions. Their keys (`x/…`) are
// their own. Nothing they are answered is checked here: every entry they put in the log is
// judged at apply by the naive key space (keyspace-check.ts), and the events it makes by the
// same reference at the end of the run.
import type { Prng } from '../core/base/prng.js';
import { bytes, KV, revisionOf } from './kv-requests.js';
import { LEASE } from './lease-session.js';
import { call, Running, sleep, type ClientEnv } from './sim-client.js';

const KEYS = 6;
/** Pause between a client's requests, in ms. */
const THINK_MS = { min: 10, max: 60 } as const;
/** Ops per txn branch at most, and how deep txns nest. */
const BRANCH_OPS_MAX = 3;
const NEST_DEPTH_MAX = 2;
/** The explorers' own lease: longer than any run, so it stays while they attach keys to it. */
const LEASE_TTL_SECONDS = 600;

export interface KeyspaceWorkloadOptions {
  readonly clients: number;
  readonly opTimeoutMs: number;
  readonly attemptTimeoutMs: number;
}

export class KeyspaceWorkload {
  private readonly running = new Running();
  private revisionSeen = 1;
  private lease = '0';
  private values = 0;

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly opts: KeyspaceWorkloadOptions,
  ) {}

  get idle(): boolean {
    return this.running.idle;
  }

  start(): void {
    for (let c = 0; c < this.opts.clients; c++) void this.running.loop(() => this.loop());
  }

  private async loop(): Promise<void> {
    await sleep(this.env, this.prng.int(0, 50));
    while (this.env.q.now < this.env.stopAtMs) {
      if (this.lease === '0' && this.prng.chance(0.2)) await this.grant();
      else await this.send(this.request());
      await sleep(this.env, this.prng.int(THINK_MS.min, THINK_MS.max));
    }
  }

  private async grant(): Promise<void> {
    const r = await this.call(LEASE.grant, { TTL: String(LEASE_TTL_SECONDS), ID: '0' });
    if (r !== undefined) this.lease = String(r['ID']);
  }

  private async send(req: { path: string; request: object }): Promise<void> {
    await this.call(req.path, req.request);
  }

  private async call(path: string, request: object): Promise<Record<string, unknown> | undefined> {
    const r = await call(this.env, this.prng, path, request, true, {
      timeoutMs: this.opts.opTimeoutMs,
      attemptTimeoutMs: this.opts.attemptTimeoutMs,
    });
    if (!r.ok) return undefined;
    const rev = revisionOf(r.response);
    if (rev > this.revisionSeen) this.revisionSeen = rev;
    return r.response;
  }

  private request(): { path: string; request: object } {
    const r = this.prng.next();
    if (r < 0.25) return { path: KV.put, request: this.put() };
    if (r < 0.35) return { path: KV.deleteRange, request: this.deleteRange() };
    if (r < 0.97) return { path: KV.txn, request: this.txn(0) };
    // Compact a little behind what has been seen; a revision already compacted is refused.
    const revision = Math.max(1, this.revisionSeen - this.prng.int(0, 30));
    return { path: KV.compact, request: { revision: String(revision) } };
  }

  private key(): Buffer {
    return bytes(`x/${this.prng.int(0, KEYS)}`);
  }

  /** A range end: none (one key), another key, the prefix end of `x/`, or "from key" (\0). */
  private rangeEnd(): Buffer | undefined {
    const r = this.prng.next();
    if (r < 0.4) return undefined;
    if (r < 0.7) return bytes(`x/${this.prng.int(0, KEYS + 1)}`);
    if (r < 0.9) return bytes('x0');
    return Buffer.from([0]);
  }

  /** A revision near what has been seen: mostly small offsets, so compares are often close. */
  private revisionNear(): string {
    return String(Math.max(0, this.revisionSeen - this.prng.int(-1, 6)));
  }

  private put(): object {
    const r = this.prng.next();
    const lease = this.prng.chance(0.3) ? this.lease : '0';
    if (r < 0.07) return { key: this.key(), value: Buffer.alloc(0), ignore_value: true };
    if (r < 0.14) return { key: this.key(), value: bytes(this.value()), ignore_lease: true };
    return {
      key: this.key(),
      value: bytes(this.value()),
      lease,
      prev_kv: this.prng.chance(0.5),
    };
  }

  private value(): string {
    return `w${++this.values}`;
  }

  private deleteRange(): object {
    const end = this.rangeEnd();
    return { key: this.key(), ...(end ? { range_end: end } : {}), prev_kv: this.prng.chance(0.5) };
  }

  private range(): object {
    const end = this.rangeEnd();
    const p = this.prng;
    return {
      key: this.key(),
      ...(end ? { range_end: end } : {}),
      limit: String(p.chance(0.4) ? p.int(1, 4) : 0),
      revision: p.chance(0.2) ? String(Math.max(1, this.revisionSeen - p.int(0, 10))) : '0',
      sort_order: p.pick(['NONE', 'NONE', 'ASCEND', 'DESCEND']),
      sort_target: p.pick(['KEY', 'KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE']),
      keys_only: p.chance(0.15),
      count_only: p.chance(0.1),
      min_mod_revision: p.chance(0.1) ? this.revisionNear() : '0',
      max_create_revision: p.chance(0.1) ? this.revisionNear() : '0',
    };
  }

  private compare(): object {
    const p = this.prng;
    const end = p.chance(0.2) ? this.rangeEnd() : undefined;
    const base = {
      result: p.pick(['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL']),
      key: this.key(),
      ...(end ? { range_end: end } : {}),
    };
    switch (p.int(0, 5)) {
      case 0:
        return { ...base, target: 'VERSION', version: String(p.int(0, 4)) };
      case 1:
        return { ...base, target: 'CREATE', create_revision: this.revisionNear() };
      case 2:
        return { ...base, target: 'MOD', mod_revision: this.revisionNear() };
      case 3:
        return {
          ...base,
          target: 'VALUE',
          value: bytes(`w${p.int(this.values - 5, this.values + 1)}`),
        };
      default:
        return { ...base, target: 'LEASE', lease: p.chance(0.5) ? this.lease : '0' };
    }
  }

  private op(depth: number): object {
    const r = this.prng.next();
    if (r < 0.35) return { request_range: this.range() };
    if (r < 0.7) return { request_put: this.put() };
    if (r < 0.9 || depth >= NEST_DEPTH_MAX) return { request_delete_range: this.deleteRange() };
    return { request_txn: this.txn(depth + 1) };
  }

  private txn(depth: number): object {
    const p = this.prng;
    const ops = (n: number): object[] => Array.from({ length: n }, () => this.op(depth));
    return {
      compare: Array.from({ length: p.int(0, 3) }, () => this.compare()),
      success: ops(p.int(0, BRANCH_OPS_MAX + 1)),
      failure: ops(p.int(0, BRANCH_OPS_MAX)),
    };
  }
}
