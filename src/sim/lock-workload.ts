// Simulated users of the Lock service (v3lockpb.Lock) and of the Election service
// (v3electionpb.Election), the server-side recipes etcd clients call. Each holds a lease
// (lease-session.ts), asks for the lock (or campaigns) with it, and while it holds — and tenure's
// SDK rule says its lease is still certain — acts now and then; the times it acted are its
// effects. Then it lets go (Unlock, Resign), retrying on another member when that fails (users
// treat both as safe to repeat; half of them leave the failed call open), and later asks again
// with the same lease, so its key has the same name: the setting in which a late Unlock can
// delete a newer holder's key. Every hold is recorded for the lock exclusion checker; its fencing
// token is the key's create revision (read from the simulator's event record for a lock, from the
// LeaderKey for an election).
import type { Mutants } from '../core/base/mutants.js';
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import { bytes, text } from './kv-requests.js';
import type { LeaseRecord } from './lease-session.js';
import { openSession, type LeaseSession } from './lease-session.js';
import { call, Running, sleep, type ClientEnv } from './sim-client.js';

export const LOCK = {
  lock: '/v3lockpb.Lock/Lock',
  unlock: '/v3lockpb.Lock/Unlock',
} as const;
export const ELECTION = {
  campaign: '/v3electionpb.Election/Campaign',
  resign: '/v3electionpb.Election/Resign',
} as const;

/** Between two effects of a holder, in ms. */
const EFFECT_EVERY_MS = { min: 5, max: 20 } as const;
/** How long a holder means to hold, in ms; now and then much longer than a lease (a long job). */
const HOLD_MS = { min: 20, max: 300 } as const;
const LONG_HOLD_MS = { min: 1000, max: 5000, probability: 0.15 } as const;
/** How often a session uses a lock nobody else asks for. */
const OWN_LOCK_PROBABILITY = 0.25;
/** Unlock attempts at most (each may go to another member). */
const UNLOCK_ATTEMPTS_MAX = 3;
/**
 * A client's own release timer as a part of the operation timeout (14 elections): 2 elections,
 * less than the member's 7.
 */
const OWN_TIMER_OF_OP_TIMEOUT = 2 / 14;

/** A hold as recorded while running; the token is resolved from the event record at the end. */
export interface RecordedHold {
  readonly lock: string;
  readonly client: number;
  readonly lease: string;
  /** The lock key (`name/<lease hex>`) and the Lock answer's revision, to find the token. */
  readonly key: string;
  readonly revision: number;
  /** For an election: the LeaderKey's create revision (the token itself). */
  readonly rev: number | undefined;
  readonly requestedMs: number;
  readonly acquiredMs: number;
  releasedMs: number;
  readonly effects: number[];
}

export interface LockWorkloadOptions {
  /** Lock service users, or Election service candidates. */
  readonly service: 'lock' | 'election';
  readonly clients: number;
  readonly locks: number;
  readonly ttlSeconds: number;
  readonly opTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  /** How long a Lock call may wait for its turn, in ms. */
  readonly lockWaitMs: number;
  readonly mutants: Mutants;
}

export class LockWorkload {
  readonly holds: RecordedHold[] = [];
  private readonly running = new Running();

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly leases: LeaseRecord,
    private readonly opts: LockWorkloadOptions,
    /** Client numbers start here (they share the lease record with other holders). */
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
    const kind = this.opts.service === 'lock' ? 'lock' : 'elect';
    while (this.env.q.now < this.env.stopAtMs) {
      const session = await openSession(this.env, this.prng, this.leases, {
        client,
        ttlSeconds: this.opts.ttlSeconds,
        opTimeoutMs: this.opts.opTimeoutMs,
        attemptTimeoutMs: this.opts.attemptTimeoutMs,
        mutants: this.opts.mutants,
        // Half use the SDK's default jeopardy; half act until the lease's certain end.
        ...(this.prng.chance(0.5) ? { renewDeadlineMs: Infinity } : {}),
      });
      if (!session) continue;
      // Mostly a shared lock; now and then one of its own, which it gets back at once when it
      // locks again (so a late Unlock of its previous hold meets a holder, not a waiter).
      const name = this.prng.chance(OWN_LOCK_PROBABILITY)
        ? `${kind}/own${client}`
        : `${kind}/${this.prng.int(0, this.opts.locks)}`;
      // Lock again and again with the same lease (the same key name) while it lasts.
      while (!session.expired && this.env.q.now < this.env.stopAtMs) {
        if (!(await this.holdOnce(client, name, session))) break;
        await sleep(this.env, this.prng.int(0, 40));
      }
      // Mostly it revokes when it leaves; sometimes it just goes away and its lease runs out.
      if (this.prng.chance(0.8)) await session.revoke();
      else session.abandon();
    }
  }

  /** Lock, act while certain, unlock; false when the lock could not be had. */
  private async holdOnce(client: number, name: string, session: LeaseSession): Promise<boolean> {
    const requestedMs = this.env.q.now;
    const election = this.opts.service === 'election';
    const r = await call(
      this.env,
      this.prng,
      election ? ELECTION.campaign : LOCK.lock,
      election
        ? { name: bytes(name), lease: session.lease, value: bytes(`c${client}`) }
        : { name: bytes(name), lease: session.lease },
      true,
      { timeoutMs: this.opts.lockWaitMs, attemptTimeoutMs: this.opts.attemptTimeoutMs },
    );
    if (!r.ok) return false;
    const leader = r.response['leader'] as Record<string, unknown> | undefined;
    const hold: RecordedHold = {
      lock: name,
      client,
      lease: session.lease,
      key: text(election ? leader?.['key'] : r.response['key']),
      revision: Number((r.response['header'] as { revision?: unknown } | undefined)?.revision),
      rev: election ? Number(leader?.['rev']) : undefined,
      requestedMs,
      acquiredMs: this.env.q.now,
      releasedMs: Infinity,
      effects: [],
    };
    this.holds.push(hold);
    // It acts whenever its session says the lease is certain (the SDK's `valid()`), and waits
    // out a jeopardy in case the server confirms the lease again, as a worker that checks before
    // every step does; an expired session ends the hold.
    const long = this.prng.chance(LONG_HOLD_MS.probability);
    const until =
      this.env.q.now +
      (long
        ? this.prng.int(LONG_HOLD_MS.min, LONG_HOLD_MS.max)
        : this.prng.int(HOLD_MS.min, HOLD_MS.max));
    while (this.env.q.now < until && !session.expired) {
      if (session.valid()) hold.effects.push(this.env.q.now);
      await sleep(this.env, this.prng.int(EFFECT_EVERY_MS.min, EFFECT_EVERY_MS.max));
    }
    hold.releasedMs = this.env.q.now;
    if (!session.valid()) return false;
    const release = election
      ? { path: ELECTION.resign, request: { leader } }
      : { path: LOCK.unlock, request: { key: bytes(hold.key) } };
    // Half the clients give up on a release by a timer of their own, shorter than the member's
    // request timeout (as etcdctl's 5 s against etcd's 7 s), and leave the call open: the member
    // goes on serving it while they unlock elsewhere and lock again.
    const leaveOpen = client % 2 === 1;
    let failedAt: NodeId | undefined;
    for (let i = 0; i < UNLOCK_ATTEMPTS_MAX; i++) {
      const u = await call(this.env, this.prng, release.path, release.request, true, {
        timeoutMs: leaveOpen
          ? this.opts.opTimeoutMs * OWN_TIMER_OF_OP_TIMEOUT
          : this.opts.opTimeoutMs,
        attemptTimeoutMs: this.opts.attemptTimeoutMs,
        avoid: failedAt,
        leaveOpen,
      });
      if (u.ok) return true;
      failedAt = u.node;
    }
    return false;
  }
}
