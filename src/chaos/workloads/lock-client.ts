// One lock client of the locks workload, run as a child process of the chaos run (locks.ts) so
// that the run can SIGSTOP it while it holds a lock: a holder's own process paused past its lease,
// the case fencing exists for (Kleppmann, "How to do distributed locking", 2016: a GC pause
// between the lease check and the write). It takes one of the run's locks again and again, through
// the SDK's Lock recipe (client/lock.ts) or through the etcd Lock service (lock-service.ts, with
// a lease of its own kept alive), and while it believes it holds it writes to the run's fenced
// resource with its token: it checks that it still holds, works a little (where a pause makes it
// stale), then writes, as a real holder would. Everything is reported to the parent over IPC
// (lock-messages.ts); the parent judges the writes. Started with one argument, its JSON config.
import { connect, type Client, type Session, type SessionTransport } from '../../client/index.js';
import { Lock } from '../../client/lock.js';
import { prng as makePrng, type Prng } from '../../core/base/prng.js';
import {
  monotonicMs,
  type ClientMessage,
  type LockClientConfig,
  type ParentMessage,
} from './lock-messages.js';
import { LockService } from './lock-service.js';

/**
 * How long a holder means to hold, and the pause between its holds, in ms; now and then much
 * longer than its lease (a long job), so that a fault can come while it holds.
 */
const holdMs = { min: 200, max: 3_000 } as const;
const longHoldMs = { min: 4_000, max: 8_000, probability: 0.2 } as const;
const betweenHoldsMs = { min: 50, max: 500 } as const;
/** The work between a holder's check and its write, and between its writes, in ms. */
const workMs = { min: 20, max: 150 } as const;
const idleMs = { min: 10, max: 60 } as const;
/** Hang guards on calls, not speed checks. */
const callTimeoutMs = 3_000;
const lockDeadlineMs = 15_000;
const unlockAttempts = 3;
/** The Lock-service client stops trusting its lease this much early, as the SDK session does. */
const certaintyMargin = 0.01;

const config = JSON.parse(process.argv[2] ?? '{}') as LockClientConfig;
const stop = new AbortController();
const pending = new Map<number, (accepted: boolean) => void>();
let seq = 0;
let holds = 0;

function send(m: ClientMessage): void {
  if (process.connected) process.send?.(m);
}

process.on('message', (m: ParentMessage) => {
  if (m.type === 'stop') stop.abort();
  else if (m.type === 'written') {
    pending.get(m.seq)?.(m.accepted);
    pending.delete(m.seq);
  }
});
process.on('disconnect', () => {
  stop.abort();
  for (const resolve of pending.values()) resolve(false);
  pending.clear();
});

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const between = (p: Prng, r: { min: number; max: number }): number =>
  r.min + p.next() * (r.max - r.min);

/** One write to the parent's fenced resource; true if the fence accepted it. */
function fencedWrite(
  hold: number,
  lock: string,
  token: bigint,
  checkedMs: number,
): Promise<boolean> {
  const s = seq++;
  return new Promise((resolve) => {
    if (!process.connected) return resolve(false);
    pending.set(s, resolve);
    send({ type: 'write', seq: s, hold, lock, token: `${token}`, checkedMs });
  });
}

/** Write while holding, until the hold's time is up, the holder knows it lost, or is fenced off. */
async function act(
  p: Prng,
  hold: number,
  lock: string,
  token: bigint,
  holds_: () => boolean,
): Promise<void> {
  const endMs = monotonicMs() + between(p, p.chance(longHoldMs.probability) ? longHoldMs : holdMs);
  while (!stop.signal.aborted && monotonicMs() < endMs) {
    if (!holds_()) return;
    const checkedMs = monotonicMs();
    await pause(between(p, workMs));
    if (!(await fencedWrite(hold, lock, token, checkedMs))) return;
    await pause(between(p, idleMs));
  }
}

function renewal(lease: bigint, sentMs: number, ttlSeconds: number): void {
  send({ type: 'renewal', lease: `${lease}`, sentMs, answeredMs: monotonicMs(), ttlSeconds });
}

/** The SDK's lease API, with every answered grant and keepalive reported. */
function recordingTransport(client: Client): SessionTransport {
  return {
    grant: async (ttl, options) => {
      const sentMs = monotonicMs();
      const g = await client.lease.grant(ttl, options);
      renewal(g.id, sentMs, g.ttlSeconds);
      return g;
    },
    keepAliveOnce: async (id, options) => {
      const sentMs = monotonicMs();
      const r = await client.lease.keepAliveOnce(id, options);
      renewal(id, sentMs, r.ttlSeconds);
      return r;
    },
    revoke: (id, options) => client.lease.revoke(id, options),
  };
}

const lockKey = (name: string): string => `chaos/locks/${name}`;

async function runSdk(client: Client, p: Prng): Promise<void> {
  const transport = recordingTransport(client);
  let session: Session | undefined;
  try {
    while (!stop.signal.aborted) {
      try {
        if (session === undefined || !session.valid()) {
          await session?.close({ timeoutMs: callTimeoutMs }).catch(() => undefined);
          session = undefined;
          session = await client.session({
            ttlSeconds: config.ttlSeconds,
            transport,
            timeoutMs: callTimeoutMs,
          });
        }
        const name = p.pick(config.locks);
        const requestedMs = monotonicMs();
        const grant = await new Lock(client, session, lockKey(name)).acquire({
          signal: stop.signal,
          timeoutMs: lockDeadlineMs,
        });
        const hold = holds++;
        send({
          type: 'hold',
          hold,
          lock: name,
          lease: `${session.leaseId}`,
          token: `${grant.token}`,
          requestedMs,
          acquiredMs: monotonicMs(),
        });
        try {
          await act(p, hold, name, grant.token, () => grant.valid());
        } finally {
          send({ type: 'released', hold, releasedMs: monotonicMs() });
          const released = await grant.release({ timeoutMs: callTimeoutMs }).catch(() => false);
          // Not released: the name stays queued under this session and its key is kept alive,
          // blocking the lock for everyone; a fresh session lets the old key go with its lease.
          if (!released) {
            await session.close({ timeoutMs: callTimeoutMs }).catch(() => undefined);
            session = undefined;
          }
        }
      } catch {
        // Not granted (timeout, lost session, member down): try again.
      }
      await pause(between(p, betweenHoldsMs));
    }
  } finally {
    await session?.close({ timeoutMs: callTimeoutMs }).catch(() => undefined);
  }
}

/** A lease of the Lock-service client: granted, kept alive, trusted until its certainty ends. */
class ServiceLease {
  certainUntilMs: number;
  #gone = false;
  readonly #stop = new AbortController();
  readonly #keeper: Promise<void>;

  private constructor(
    private readonly client: Client,
    readonly id: bigint,
    readonly ttlSeconds: number,
    sentMs: number,
  ) {
    this.certainUntilMs = this.#until(sentMs, ttlSeconds);
    this.#keeper = this.#keepAlive();
  }

  static async grant(client: Client, ttlSeconds: number): Promise<ServiceLease> {
    const sentMs = monotonicMs();
    const g = await client.lease.grant(ttlSeconds, { timeoutMs: callTimeoutMs });
    renewal(g.id, sentMs, g.ttlSeconds);
    return new ServiceLease(client, g.id, g.ttlSeconds, sentMs);
  }

  certain(): boolean {
    return !this.#gone && monotonicMs() < this.certainUntilMs;
  }

  /** Stop renewing and revoke (best effort: an unrevoked lease just expires). */
  async abandon(): Promise<void> {
    this.#stop.abort();
    await this.#keeper;
    await this.client.lease.revoke(this.id, { timeoutMs: callTimeoutMs }).catch(() => undefined);
  }

  #until(sentMs: number, ttlSeconds: number): number {
    return sentMs + (ttlSeconds * 1000) / (1 + certaintyMargin);
  }

  async #keepAlive(): Promise<void> {
    // Every TTL/3, as etcd's Go client renews (client/v3/lease.go).
    const everyMs = (this.ttlSeconds * 1000) / 3;
    const signal = this.#stop.signal;
    while (!signal.aborted && !this.#gone) {
      await pause(everyMs);
      if (signal.aborted) return;
      const sentMs = monotonicMs();
      try {
        const r = await this.client.lease.keepAliveOnce(this.id, { timeoutMs: everyMs, signal });
        renewal(this.id, sentMs, r.ttlSeconds);
        this.certainUntilMs = Math.max(this.certainUntilMs, this.#until(sentMs, r.ttlSeconds));
      } catch (e) {
        if (e instanceof Error && e.name === 'LeaseNotFoundError') this.#gone = true;
      }
    }
  }
}

async function runService(client: Client, p: Prng): Promise<void> {
  const svc = new LockService(config.endpoints);
  // Each client keeps to one member until it fails it.
  let member = config.client % svc.members;
  const next = (): void => {
    member = (member + 1) % svc.members;
  };
  let lease: ServiceLease | undefined;
  try {
    while (!stop.signal.aborted) {
      try {
        if (lease === undefined || !lease.certain()) {
          await lease?.abandon();
          lease = undefined;
          lease = await ServiceLease.grant(client, config.ttlSeconds);
        }
        const l = lease;
        const name = p.pick(config.locks);
        const requestedMs = monotonicMs();
        let key: Buffer;
        try {
          key = await svc.lock(member, lockKey(name), l.id, lockDeadlineMs, stop.signal);
        } catch (e) {
          // The key may still wait in the queue (a member that died with the call): the lease
          // goes with it, and the next lock has a fresh one.
          next();
          lease = undefined;
          await l.abandon();
          throw e;
        }
        const acquiredMs = monotonicMs();
        // The token is the key's create revision; the Lock answer's header is that of the read
        // that found the turn (etcd's Mutex.Lock), not the key's creation.
        const kv = await client.kv.get(key, { timeoutMs: callTimeoutMs }).catch(() => undefined);
        if (kv === undefined || kv.lease !== l.id) {
          send({ type: 'note', text: `lock ${name} granted, but its key was not read back` });
          lease = undefined;
          await l.abandon();
          continue;
        }
        const hold = holds++;
        send({
          type: 'hold',
          hold,
          lock: name,
          lease: `${l.id}`,
          token: `${kv.createRevision}`,
          requestedMs,
          acquiredMs,
        });
        try {
          await act(p, hold, name, kv.createRevision, () => l.certain());
        } finally {
          send({ type: 'released', hold, releasedMs: monotonicMs() });
          let unlocked = false;
          let doubtful = false;
          for (let a = 0; a < unlockAttempts && !unlocked; a++) {
            try {
              await svc.unlock(member, key, callTimeoutMs);
              unlocked = true;
            } catch {
              doubtful = true;
              next();
            }
          }
          // Not unlocked: the key may still be there, and with the lease kept the next Lock of
          // this name would find it and return it as if granted anew. An attempt that failed
          // before one succeeded may still arrive late and delete the next key of this name
          // (server/api/lock.ts: nothing on the wire dates an Unlock, etcd #22082), which is the
          // protocol's limit, not a bug to report. Either way the lease goes.
          if (!unlocked || doubtful) {
            lease = undefined;
            await l.abandon();
          }
        }
        // The lease is kept for the next lock, whose key then has the same name: the setting in
        // which a late Unlock deletes a newer holder's key (etcd #22082).
      } catch {
        // Not granted: try again.
      }
      await pause(between(p, betweenHoldsMs));
    }
  } finally {
    await lease?.abandon();
    svc.close();
  }
}

async function main(): Promise<void> {
  const eps = config.endpoints;
  const rotated = eps.map((_, i) => eps[(config.client + i) % eps.length] as string);
  const client = await connect({ endpoints: rotated, defaultTimeoutMs: callTimeoutMs });
  const p = makePrng(config.seed);
  try {
    if (config.mode === 'sdk') await runSdk(client, p);
    else await runService(client, p);
  } finally {
    await client.close().catch(() => undefined);
  }
}

main().then(
  () => {
    if (!process.connected) process.exit(0);
    process.send?.({ type: 'done' } satisfies ClientMessage, () => process.exit(0));
  },
  (e: unknown) => {
    process.stderr.write(
      `lock client ${config.client}: ${e instanceof Error ? e.stack : String(e)}\n`,
    );
    process.exit(1);
  },
);
