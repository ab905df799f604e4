// Leases: granted with short TTLs (2–5 s), each with a key or two attached, renewed for a while,
// then left to expire or revoked, while observers on every member look for the moment each lease
// is gone; judged by the lease contract (lease-verdict.ts): no lease may be gone before the
// latest promise a renewal made, the send time plus the TTL (Gray & Cheriton 1989).
//
// Lease clients start two on each member: one talks to that member only, the other starts there
// and moves on when it fails (the SDK's failover). Clients of the leader matter most: a leader
// cut off from its peers that still answers keepalives from its own state (the fault
// `partition-leader-starved`) promises what the new leader on the other side does not keep.
// Every renewal is one keepAliveOnce (a LeaseKeepAlive stream of one request, as Go's
// KeepAliveOnce), sent every third of the TTL as Go's client does (client/v3/lease.go), so that
// each answer has its own send time: the promise counts from the send, not the answer (a client
// that dated it from the answer would trust the lease longer than the server keeps it).
//
// A loss is evidence that a lease was gone no later than a time T; T must be an upper bound, never
// a guess, since the checker compares it with a promise:
// - a linearizable Range, called after the key's Put was acknowledged, that shows the key absent:
//   the read took effect at some point in [call, return], and nothing deletes these keys but the
//   lease's end, so the lease was gone by that point: T = the read's return (its call would be
//   unsound: the read may have taken effect after the expiry that came after the call);
// - a keepalive answered TTL ≤ 0 (LeaseNotFoundError), a TimeToLive answered −1, a Put with the
//   lease refused as "lease not found" (checked when the Put is applied): T = the answer's arrival;
// - a watch on the prefix delivering a key's DELETE (a committed revision): T = its arrival.
// A revoke is recorded as sent before it is sent, so that every loss from then on is excused.
import { setMaxListeners } from 'node:events';
import { connect, LeaseNotFoundError, type Client } from '../../client/index.js';
import { sleep } from '../../launcher/poll.js';
import type { Prng } from '../../core/base/prng.js';
import type { ClockWindows } from '../clock-windows.js';
import type { Members } from '../members.js';
import type { Timeline } from '../timeline.js';
import { LEASE_KEY_PREFIX, LeaseEvents, leaseKey, leaseOfKey } from './lease-events.js';
import { judgeLeases } from './lease-verdict.js';
import type { Workload, WorkloadContext, WorkloadResult } from './workload.js';

const clientsPerMember = 2;
/** Leases each client has on the go at once. */
const leasesPerClient = 2;
const ttlSecondsMin = 2;
const ttlSecondsMax = 5;
/** How long a renewed lease is renewed, and a lease to be revoked first. */
const renewMsMin = 2_000;
const renewMsMax = 20_000;
const renewBeforeRevokeMsMax = 8_000;
/** Each call's bound (a hang guard; a late answer is still sound evidence). */
const callTimeoutMs = 3_000;
/** Observers read this often; a lease left to expire is asked for by TimeToLive this often. */
const readIntervalMsMin = 150;
const readIntervalMsMax = 350;
const timeToLiveIntervalMs = 400;
/** How long past its TTL a lease left to expire is waited for before the client moves on. */
const expiryWaitMs = 20_000;
/** Calls in flight at once at most, each listening on the run's signal (with room to spare). */
const signalListenersMax = 200;
/** After a failure that is not the lease's end, before the next try. */
const retryPauseMs = 300;

type Fate = 'expire' | 'renew' | 'revoke';

export class LeasesWorkload implements Workload {
  readonly name = 'leases';
  readonly #events = new LeaseEvents();
  readonly #endpoints: readonly string[];
  readonly #prng: Prng;
  readonly #timeline: Timeline;
  readonly #clocks: ClockWindows;
  readonly #members: Members;
  #ops = 0;
  #unknown = 0;

  constructor(ctx: WorkloadContext) {
    this.#endpoints = ctx.endpoints;
    this.#prng = ctx.prng;
    this.#timeline = ctx.timeline;
    this.#clocks = ctx.clocks;
    this.#members = ctx.members;
  }

  get opsSoFar(): number {
    return this.#ops;
  }

  async run(outer: AbortSignal): Promise<void> {
    const n = this.#endpoints.length;
    // Every call in flight listens on the signal: more than Node's default warning threshold.
    const own = new AbortController();
    setMaxListeners(signalListenersMax, own.signal);
    const signal = own.signal;
    const stop = (): void => own.abort(outer.reason);
    if (outer.aborted) stop();
    else outer.addEventListener('abort', stop, { once: true });
    await Promise.all([
      ...Array.from({ length: n * clientsPerMember }, (_, c) => this.#leaseClient(c, signal)),
      ...Array.from({ length: n }, (_, i) => this.#observer(i, signal)),
    ]);
  }

  check(): WorkloadResult {
    return judgeLeases({
      name: this.name,
      events: this.#events,
      clocks: this.#clocks,
      timeline: this.#timeline,
      ops: this.#ops,
      unknown: this.#unknown,
    });
  }

  #memberName(id: bigint): string {
    const i = this.#members.ids.indexOf(id.toString());
    return i < 0 ? `member ${id}` : (this.#members.names[i] ?? `member ${id}`);
  }

  async #leaseClient(c: number, signal: AbortSignal): Promise<void> {
    const eps = this.#endpoints;
    const home = c % eps.length;
    const pinned = Math.floor(c / eps.length) % 2 === 0;
    const endpoints = pinned
      ? [eps[home] as string]
      : eps.map((_, i) => eps[(home + i) % eps.length] as string);
    const client = await connect({ endpoints, defaultTimeoutMs: callTimeoutMs });
    try {
      await Promise.all(
        Array.from({ length: leasesPerClient }, async (_, k) => {
          const prng = this.#prng.fork(`lease-client-${c}-${k}`);
          while (!signal.aborted) {
            try {
              await this.#oneLease(client, c, prng, signal);
            } catch {
              // Aborted (the run is over), or a failure the lease's own steps did not expect.
              if (!signal.aborted) await sleep(retryPauseMs, signal).catch(() => undefined);
            }
          }
        }),
      );
    } finally {
      await client.close();
    }
  }

  /** One lease's life: grant, attach, renew as its fate says, then revoke or wait for its end. */
  async #oneLease(client: Client, c: number, prng: Prng, signal: AbortSignal): Promise<void> {
    const ev = this.#events;
    const ttl = prng.int(ttlSecondsMin, ttlSecondsMax + 1);
    const r = prng.next();
    const fate: Fate = r < 0.25 ? 'expire' : r < 0.75 ? 'renew' : 'revoke';
    const grantSentMs = performance.now();
    this.#ops++;
    let id: bigint;
    try {
      const g = await client.lease.grant(ttl, { signal });
      id = g.id;
      ev.renewal({
        lease: id.toString(),
        client: c,
        sentMs: grantSentMs,
        answeredMs: performance.now(),
        ttlSeconds: g.ttlSeconds,
        via: 'grant',
        answeredBy: this.#memberName(g.header.memberId),
      });
    } catch (e) {
      // A grant that failed may still have been applied: a lease nobody knows of, which expires.
      if (signal.aborted) throw e;
      this.#unknown++;
      await sleep(retryPauseMs, signal);
      return;
    }
    const lease = id.toString();
    const keys = prng.chance(0.5) ? 2 : 1;
    for (let k = 0; k < keys; k++) {
      const key = leaseKey(lease, k);
      this.#ops++;
      try {
        await client.kv.put(key, `client ${c}`, { lease: id, signal });
        ev.attach({ key, lease, ackedMs: performance.now() });
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof LeaseNotFoundError)
          ev.loss({
            lease,
            atMs: performance.now(),
            evidence: `client ${c}'s Put of ${key} refused: lease not found`,
            source: 'put',
          });
        // Otherwise the key may or may not be there: its absence proves nothing.
        else this.#unknown++;
      }
    }
    const renewMs =
      fate === 'expire'
        ? 0
        : fate === 'renew'
          ? renewMsMin + prng.next() * (renewMsMax - renewMsMin)
          : prng.next() * renewBeforeRevokeMsMax;
    const gone = await this.#renew(client, c, id, ttl, renewMs, prng, signal);
    if (gone) return;
    if (fate === 'revoke') {
      ev.revocation({ lease, client: c, sentMs: performance.now() });
      this.#ops++;
      await client.lease.revoke(id, { signal }).catch((e: unknown) => {
        if (signal.aborted) throw e;
      });
      return;
    }
    await this.#awaitExpiry(client, c, id, ttl, signal);
  }

  /** Renew every third of the TTL for `forMs`; true if an answer said the lease is gone. */
  async #renew(
    client: Client,
    c: number,
    id: bigint,
    ttl: number,
    forMs: number,
    prng: Prng,
    signal: AbortSignal,
  ): Promise<boolean> {
    const lease = id.toString();
    const untilMs = performance.now() + forMs;
    let ttlMs = ttl * 1000;
    while (performance.now() + ttlMs / 3 < untilMs) {
      // A little jitter, so that the clients' renewals do not march in step.
      await sleep((ttlMs / 3) * (0.9 + 0.2 * prng.next()), signal);
      const sentMs = performance.now();
      this.#ops++;
      try {
        const a = await client.lease.keepAliveOnce(id, { signal });
        ttlMs = a.ttlSeconds * 1000;
        this.#events.renewal({
          lease,
          client: c,
          sentMs,
          answeredMs: performance.now(),
          ttlSeconds: a.ttlSeconds,
          via: 'keepalive',
          answeredBy: this.#memberName(a.header.memberId),
        });
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof LeaseNotFoundError) {
          this.#events.loss({
            lease,
            atMs: performance.now(),
            evidence: `client ${c}'s keepalive sent at ${this.#timeline.at(sentMs)} answered: ${e.message}`,
            source: 'keepalive',
          });
          return true;
        }
        // Unanswered: the next renewal tries again (a lease not renewed in time may expire).
      }
    }
    return false;
  }

  /** Ask TimeToLive until it says the lease is gone (−1), within a hang guard. */
  async #awaitExpiry(
    client: Client,
    c: number,
    id: bigint,
    ttl: number,
    signal: AbortSignal,
  ): Promise<void> {
    const untilMs = performance.now() + ttl * 1000 + expiryWaitMs;
    while (performance.now() < untilMs) {
      await sleep(timeToLiveIntervalMs, signal);
      const callMs = performance.now();
      this.#ops++;
      try {
        const r = await client.lease.timeToLive(id, { signal });
        if (r.ttlSeconds !== -1) continue;
        this.#events.loss({
          lease: id.toString(),
          atMs: performance.now(),
          evidence:
            `client ${c}'s TimeToLive called at ${this.#timeline.at(callMs)} answered -1 ` +
            `(by ${this.#memberName(r.header.memberId)})`,
          source: 'ttl',
        });
        return;
      } catch (e) {
        if (signal.aborted) throw e;
      }
    }
  }

  /** Member i's observer: linearizable reads of every lease key, and a watch on them. */
  async #observer(i: number, signal: AbortSignal): Promise<void> {
    const name = this.#members.names[i] ?? String(i);
    const client = await connect({
      endpoints: [this.#endpoints[i] as string],
      defaultTimeoutMs: callTimeoutMs,
    });
    try {
      await Promise.all([this.#reads(client, name, i, signal), this.#watch(client, name, signal)]);
    } finally {
      await client.close();
    }
  }

  async #reads(client: Client, name: string, i: number, signal: AbortSignal): Promise<void> {
    const prng = this.#prng.fork(`lease-observer-${i}`);
    const t = this.#timeline;
    /** Keys this observer has seen gone already. */
    const seenGone = new Set<string>();
    while (!signal.aborted) {
      try {
        await sleep(
          readIntervalMsMin + prng.next() * (readIntervalMsMax - readIntervalMsMin),
          signal,
        );
        const callMs = performance.now();
        this.#ops++;
        const r = await client.kv.range(LEASE_KEY_PREFIX, { prefix: true, keysOnly: true, signal });
        const returnMs = performance.now();
        const present = new Set(r.kvs.map((kv) => kv.key.toString()));
        for (const a of this.#events.attached.values()) {
          if (a.ackedMs >= callMs || seenGone.has(a.key) || present.has(a.key)) continue;
          seenGone.add(a.key);
          this.#events.loss({
            lease: a.lease,
            atMs: returnMs,
            evidence:
              `Range via ${name} [${t.at(callMs)}, ${t.at(returnMs)}] at revision ` +
              `${r.header.revision} saw ${a.key} absent`,
            source: `read ${name}`,
          });
        }
      } catch {
        // Aborted, or the read failed (a member cut off or down): a failed read shows nothing.
      }
    }
  }

  async #watch(client: Client, name: string, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const w = client.watch(LEASE_KEY_PREFIX, { prefix: true, signal });
        for await (const batch of w) {
          const atMs = performance.now();
          for (const e of batch.events) {
            if (e.type !== 'delete') continue;
            const key = e.kv.key.toString();
            const lease = leaseOfKey(key);
            if (lease === undefined) continue;
            this.#events.loss({
              lease,
              atMs,
              evidence: `watch via ${name} delivered the DELETE of ${key} at revision ${e.kv.modRevision}`,
              source: `watch ${name}`,
            });
          }
        }
      } catch {
        // The watch ended (no member answered for a while): start another, from now.
      }
      if (!signal.aborted) await sleep(retryPauseMs, signal).catch(() => undefined);
    }
  }
}
