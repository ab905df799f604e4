// Simulated clients: each is sequential (one operation outstanding), retries a write with the same
// session and sequence number after a timeout or a lost leader (so duplicates reach the log and the
// state machine must drop them, thesis §6.3), and records every operation for the checker. A write
// whose outcome never became known is recorded with an unknown output and an infinite return.
//
// The cluster runs the etcd key space: register operations go out as etcd requests
// (kv-requests.ts). Writers also use leases and compact old revisions now and then, on keys
// outside the checked ones; those operations are not in the history.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { Command } from '../core/state/command.js';
import { isEtcdError } from '../core/state/etcd-errors.js';
import type { LeaseId } from '../core/state/kv-types.js';
import type { KvInput, KvOperation, KvOutput } from '../check/history.js';
import { InvariantViolation } from './invariants.js';
import {
  commandRequest,
  fromUtf8,
  outputOf,
  requestFor,
  revisionOf,
  utf8,
  type ClientRequest,
  type ClientResult,
} from './kv-requests.js';

export type Reply =
  | { readonly ok: true; readonly result: ClientResult }
  | { readonly ok: false; readonly leader: NodeId };

/** How the workload reaches the cluster: send one request, get at most one reply. */
export interface ClientNet {
  request(
    node: NodeId,
    session: number,
    seq: number,
    request: ClientRequest,
    reply: (r: Reply) => void,
  ): void;
  nodes(): NodeId[];
  now(): number;
  after(delayMs: number, fn: () => void): void;
}

/** One client operation: the request, and what the checker sees of it. */
export interface ClientOp {
  /** The register operation; undefined for one outside the checked keys (not recorded). */
  readonly input: KvInput | undefined;
  readonly request: ClientRequest;
  /** Called with the answer once it is known. */
  readonly onResult?: (r: ClientResult) => void;
}

/** Seconds a workload lease lives; leases never expire inside a run (nobody revokes on expiry). */
const LEASE_TTL_SECONDS = 60;
/** A writer compacts once the newest revision it has seen is this far past the last compaction. */
const COMPACT_EVERY_REVISIONS = 100;
/** Revisions of history kept below the newest seen when compacting. */
const COMPACT_KEEP_REVISIONS = 20;

export interface WorkloadOptions {
  readonly clients: number;
  /** Read-only clients, in addition to `clients`. */
  readonly readers: number;
  readonly keys: number;
  readonly opTimeoutMs: number;
  /** A single attempt is abandoned after this long and the request retried elsewhere. */
  readonly attemptTimeoutMs: number;
  /** No new operation starts after this time. */
  readonly stopAtMs: number;
}

export class Workload {
  readonly history: KvOperation[] = [];
  /** Writes acknowledged to a client, as "session:seq". */
  readonly acked = new Set<string>();
  private nextHistoryId = 0;
  private nextSession = 1;
  private valueCounter = 0;
  private running = 0;
  pendingOps = 0;
  /** The mod revision that wrote each value, when a client has learned it. */
  private readonly revisionOfValue = new Map<string, number>();
  /** The newest store revision any answer reported. */
  private revisionSeen = 0;
  /** The revision of the last compaction a client asked for. */
  private compactedTo = 0;

  constructor(
    private readonly net: ClientNet,
    private readonly prng: Prng,
    private readonly opts: WorkloadOptions,
  ) {}

  start(): void {
    for (let c = 0; c < this.opts.clients + this.opts.readers; c++) {
      const client: ClientState = {
        historyId: this.nextHistoryId++,
        session: this.nextSession++,
        seq: 0,
        leader: 0 as NodeId,
        readOnly: c >= this.opts.clients,
        lease: undefined,
      };
      this.running++;
      this.net.after(this.prng.int(0, 20), () => this.loop(client));
    }
  }

  private loop(client: ClientState): void {
    if (this.net.now() >= this.opts.stopAtMs) {
      this.running--;
      return;
    }
    const op = client.readOnly
      ? this.getOp(this.prng.int(0, this.opts.keys))
      : this.randomOp(client);
    this.run(client, op, this.opts.opTimeoutMs, () =>
      this.net.after(this.prng.int(0, 30), () => this.loop(client)),
    );
  }

  /** Run one operation to completion or give-up, recording it; then call `next`. */
  run(client: ClientState, op: ClientOp, timeoutMs: number, next: (ok: boolean) => void): void {
    const seq = ++client.seq;
    const call = this.net.now();
    const deadline = call + timeoutMs;
    const write = op.request.type === 'command';
    let finished = false;
    let attempt = 0;
    let lastTarget: NodeId | undefined;
    this.pendingOps++;
    const finish = (result: ClientResult | undefined): void => {
      if (finished) return;
      finished = true;
      this.pendingOps--;
      const known = result !== undefined;
      if (known && write) this.acked.add(`${client.session}:${seq}`);
      if (known) {
        this.learn(op, result);
        op.onResult?.(result);
      }
      const input = op.input;
      if (input !== undefined && (known || input.type !== 'get')) {
        // A read whose outcome is unknown tells nothing and is dropped (etcd robustness rule).
        this.history.push({
          clientId: client.historyId,
          input,
          output: known ? this.output(input, result) : undefined,
          call,
          return: known ? this.net.now() : Infinity,
        });
      }
      if (!known && input !== undefined) {
        // Jepsen's rule: a client whose operation may still be in flight retires its history id.
        client.historyId = this.nextHistoryId++;
      }
      next(known);
    };
    const tryOnce = (): void => {
      if (finished) return;
      if (this.net.now() >= deadline) {
        finish(undefined);
        return;
      }
      attempt++;
      const myAttempt = attempt;
      const nodes = this.net.nodes();
      if (nodes.length === 0) {
        this.net.after(this.opts.attemptTimeoutMs, tryOnce);
        return;
      }
      // Go to the believed leader; after a timed-out attempt, rotate to another node, as etcd
      // clients rotate endpoints.
      const others = nodes.filter((n) => n !== lastTarget);
      const target =
        nodes.includes(client.leader) && client.leader !== lastTarget
          ? client.leader
          : this.prng.pick(others.length > 0 ? others : nodes);
      lastTarget = target;
      let answered = false;
      this.net.request(target, client.session, seq, op.request, (r) => {
        if (finished || answered || myAttempt !== attempt) return;
        answered = true;
        if (r.ok) {
          client.leader = target;
          finish(r.result);
        } else {
          // A reader stays on whichever node answers it; it moves elsewhere only when refused.
          client.leader = client.readOnly ? (0 as NodeId) : r.leader;
          lastTarget = r.leader === 0 ? target : undefined;
          this.net.after(this.prng.int(5, 30), tryOnce);
        }
      });
      this.net.after(this.opts.attemptTimeoutMs, () => {
        if (!answered && myAttempt === attempt) {
          if (client.leader === target) client.leader = 0 as NodeId;
          tryOnce();
        }
      });
    };
    tryOnce();
  }

  newClient(): ClientState {
    return {
      historyId: this.nextHistoryId++,
      session: this.nextSession++,
      seq: 0,
      leader: 0 as NodeId,
      readOnly: false,
      lease: undefined,
    };
  }

  key(i: number): string {
    return `k${i}`;
  }

  /** A linearizable read of key `i`. */
  getOp(i: number): ClientOp {
    const input: KvInput = { type: 'get', key: this.key(i) };
    return { input, request: requestFor(input, { asTxn: false, expectedModRevision: undefined }) };
  }

  private randomOp(client: ClientState): ClientOp {
    if (this.revisionSeen - this.compactedTo >= COMPACT_EVERY_REVISIONS) {
      // Keep the store's history (and so every snapshot) short, as an etcd operator would.
      this.compactedTo = this.revisionSeen - COMPACT_KEEP_REVISIONS;
      return this.sideOp({ type: 'compact', request: { revision: this.compactedTo } });
    }
    const key = this.key(this.prng.int(0, this.opts.keys));
    const value = `v${++this.valueCounter}`;
    const r = this.prng.next();
    let input: KvInput;
    if (r < 0.4) input = { type: 'get', key };
    else if (r < 0.65) input = { type: 'put', key, value };
    else if (r < 0.9) {
      const expected = this.prng.chance(0.3)
        ? null
        : `v${this.prng.int(Math.max(1, this.valueCounter - 5), this.valueCounter + 1)}`;
      input = { type: 'cas', key, expected, value };
    } else if (r < 0.95) input = { type: 'delete', key };
    else return this.leaseOp(client, value);
    const modRevision =
      input.type === 'cas' && input.expected !== null && this.prng.chance(0.5)
        ? this.revisionOfValue.get(input.expected)
        : undefined;
    const form = { asTxn: this.prng.chance(0.3), expectedModRevision: modRevision };
    return { input, request: requestFor(input, form) };
  }

  /**
   * A lease operation on the client's own key outside the checked ones: grant a lease, then put
   * with it, keep it alive or revoke it. The lease table is replicated state, so snapshots,
   * restores and the convergence check cover it.
   */
  private leaseOp(client: ClientState, value: string): ClientOp {
    const lease = client.lease;
    if (lease === undefined) {
      return this.sideOp(
        { type: 'leaseGrant', id: 0n, ttlSeconds: LEASE_TTL_SECONDS, nowMs: this.net.now() },
        (r) => {
          if (r.type === 'command' && r.result.type === 'leaseGrant')
            client.lease = r.result.response.id;
        },
      );
    }
    const r = this.prng.next();
    if (r < 0.6) {
      const request = { key: utf8(`lease/${client.session}`), value: utf8(value), lease };
      return this.sideOp({ type: 'put', request });
    }
    if (r < 0.8) return this.sideOp({ type: 'leaseKeepAlive', id: lease, nowMs: this.net.now() });
    client.lease = undefined;
    return this.sideOp({ type: 'leaseRevoke', id: lease });
  }

  private sideOp(command: Command, onResult?: (r: ClientResult) => void): ClientOp {
    const request = commandRequest(command);
    return onResult ? { input: undefined, request, onResult } : { input: undefined, request };
  }

  /** Remember the revisions an answer reveals, for mod-revision compares and compaction. */
  private learn(op: ClientOp, result: ClientResult): void {
    const rev = revisionOf(result);
    if (rev !== undefined && rev > this.revisionSeen) this.revisionSeen = rev;
    const input = op.input;
    if (input === undefined) return;
    if (result.type === 'range') {
      const kv = result.response.kvs[0];
      if (kv) this.revisionOfValue.set(fromUtf8(kv.value), kv.modRevision);
      return;
    }
    const r = result.result;
    const wrote =
      (input.type === 'put' && r.type !== 'error') ||
      (input.type === 'cas' && r.type === 'txn' && r.response.succeeded);
    if (wrote && rev !== undefined) this.revisionOfValue.set(input.value, rev);
  }

  private output(input: KvInput, result: ClientResult): KvOutput {
    const out = outputOf(input, result);
    if (isEtcdError(out)) {
      // Every register operation is well formed and within limits: a refusal is a bug.
      throw new InvariantViolation(
        'node-assertion',
        `etcd refused ${input.type} of ${input.key}: ${out.message}`,
      );
    }
    return out;
  }

  get idle(): boolean {
    return this.running === 0 && this.pendingOps === 0;
  }
}

export interface ClientState {
  historyId: number;
  readonly session: number;
  seq: number;
  /** The node it sends to first: the believed leader, or for a reader the node it stays on. */
  leader: NodeId;
  /**
   * A reader only reads, from one node at a time (a config poller behind a load balancer). It
   * is where a node that wrongly believes it still leads shows stale data.
   */
  readonly readOnly: boolean;
  /** The lease a writer holds for its own key outside the checked ones. */
  lease: LeaseId | undefined;
}
