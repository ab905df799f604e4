// Simulated clients: each is sequential (one operation outstanding), retries a write with the same
// session and sequence number after a timeout or a lost leader (so duplicates reach the log and the
// state machine must drop them, thesis §6.3), and records every operation for the checker. A write
// whose outcome never became known is recorded with an unknown output and an infinite return.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { RegisterOp, RegisterResult } from '../core/state/registers.js';
import type { KvOperation } from '../check/history.js';

export type Reply =
  | { readonly ok: true; readonly result: RegisterResult }
  | { readonly ok: false; readonly leader: NodeId };

/** How the workload reaches the cluster: send one request, get at most one reply. */
export interface ClientNet {
  request(
    node: NodeId,
    session: number,
    seq: number,
    op: RegisterOp,
    reply: (r: Reply) => void,
  ): void;
  nodes(): NodeId[];
  now(): number;
  after(delayMs: number, fn: () => void): void;
}

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
    const op: RegisterOp = client.readOnly
      ? { type: 'get', key: this.key(this.prng.int(0, this.opts.keys)) }
      : this.randomOp();
    this.run(client, op, this.opts.opTimeoutMs, () =>
      this.net.after(this.prng.int(0, 30), () => this.loop(client)),
    );
  }

  /** Run one operation to completion or give-up, recording it; then call `next`. */
  run(client: ClientState, op: RegisterOp, timeoutMs: number, next: (ok: boolean) => void): void {
    const seq = ++client.seq;
    const call = this.net.now();
    const deadline = call + timeoutMs;
    let finished = false;
    let attempt = 0;
    let lastTarget: NodeId | undefined;
    this.pendingOps++;
    const finish = (result: RegisterResult | undefined): void => {
      if (finished) return;
      finished = true;
      this.pendingOps--;
      const known = result !== undefined;
      if (known && op.type !== 'get') this.acked.add(`${client.session}:${seq}`);
      if (known || op.type !== 'get') {
        // A read whose outcome is unknown tells nothing and is dropped (etcd robustness rule).
        this.history.push({
          clientId: client.historyId,
          input: op,
          output: known ? result : undefined,
          call,
          return: known ? this.net.now() : Infinity,
        });
      }
      if (!known) {
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
      this.net.request(target, client.session, seq, op, (r) => {
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
    };
  }

  key(i: number): string {
    return `k${i}`;
  }

  private randomOp(): RegisterOp {
    const key = this.key(this.prng.int(0, this.opts.keys));
    const value = `v${++this.valueCounter}`;
    const r = this.prng.next();
    if (r < 0.4) return { type: 'get', key };
    if (r < 0.6) return { type: 'put', key, value };
    if (r < 0.8) return { type: 'append', key, value: `${value};` };
    if (r < 0.95) {
      const expected = this.prng.chance(0.3)
        ? null
        : `v${this.prng.int(Math.max(1, this.valueCounter - 5), this.valueCounter + 1)}`;
      return { type: 'cas', key, expected, value };
    }
    return { type: 'delete', key };
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
}
