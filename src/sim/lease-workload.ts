// Simulated lease holders that only hold: each keeps a lease alive for a while (lease-session.ts),
// then revokes it, or stops renewing so that it expires inside the run, and takes a new one. They
// give the lease contract checker renewals and losses of every kind: expiry by the leader's clock,
// a client's revoke, and — the bug the contract exists for — a lease lost while a renewal that a
// member confirmed still promised it.
import type { Mutants } from '../core/base/mutants.js';
import type { Prng } from '../core/base/prng.js';
import type { LeaseRecord } from './lease-session.js';
import { openSession } from './lease-session.js';
import { Running, sleep, type ClientEnv } from './sim-client.js';

/** How long a holder keeps a lease before it lets go, in ms. */
const HOLD_MS = { min: 200, max: 4000 } as const;

export interface LeaseWorkloadOptions {
  readonly clients: number;
  readonly ttlSeconds: number;
  readonly opTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  readonly mutants: Mutants;
}

export class LeaseWorkload {
  private readonly running = new Running();

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly record: LeaseRecord,
    private readonly opts: LeaseWorkloadOptions,
    private readonly firstClient: number,
  ) {}

  get idle(): boolean {
    return this.running.idle;
  }

  start(): void {
    for (let c = 0; c < this.opts.clients; c++)
      void this.running.loop(() => this.loop(this.firstClient + c));
  }

  private async loop(client: number): Promise<void> {
    await sleep(this.env, this.prng.int(0, 50));
    while (this.env.q.now < this.env.stopAtMs) {
      const s = await openSession(this.env, this.prng, this.record, {
        client,
        ttlSeconds: this.opts.ttlSeconds,
        opTimeoutMs: this.opts.opTimeoutMs,
        attemptTimeoutMs: this.opts.attemptTimeoutMs,
        mutants: this.opts.mutants,
      });
      if (!s) continue;
      const until = this.env.q.now + this.prng.int(HOLD_MS.min, HOLD_MS.max);
      while (!s.expired && this.env.q.now < until) await sleep(this.env, 50);
      const r = this.prng.next();
      if (r < 0.35) await s.revoke();
      else if (r < 0.85) s.abandon();
      // Otherwise it keeps renewing until the run stops.
      else while (!s.expired && this.env.q.now < this.env.stopAtMs) await sleep(this.env, 50);
    }
  }
}
