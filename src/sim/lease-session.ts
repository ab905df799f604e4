// A simulated lease holder, as an etcd client keeps one: grant a lease, attach a marker key to it,
// and renew it on a LeaseKeepAlive stream every TTL/3, moving to another member when the stream
// breaks or an answer is overdue. Every answered grant and renewal is recorded with the time it
// was sent (the lease contract's input); the holder's own view of its lease is the SDK's session
// state machine (src/client/session-state.ts), fed the same send and answer times, so a lock
// holder acts only while tenure's SDK would let it.
//
// The marker key `L/<lease>` is deleted only by a revoke of its lease: its deletion, in the
// simulator's event record, is the moment the lease was lost.
import type { Mutants } from '../core/base/mutants.js';
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { LeaseRenewal, LeaseRevocation } from '../check/lease-contract.js';
import { SessionState, sessionTiming } from '../client/session-state.js';
import type { ClientStream } from './api-channel.js';
import { bytes } from './kv-requests.js';
import { call, sleep, type ClientEnv } from './sim-client.js';

export const LEASE = {
  grant: '/etcdserverpb.Lease/LeaseGrant',
  revoke: '/etcdserverpb.Lease/LeaseRevoke',
  keepAlive: '/etcdserverpb.Lease/LeaseKeepAlive',
} as const;

/** The marker key of a lease: deleted only when the lease is revoked (or expires). */
export function leaseMarkerKey(lease: string): string {
  return `L/${lease}`;
}
export const LEASE_MARKER_PREFIX = 'L/';

/** Where every holder records what the contract checker needs. */
export interface LeaseRecord {
  readonly renewals: LeaseRenewal[];
  readonly revocations: LeaseRevocation[];
}

export interface LeaseSessionOptions {
  readonly client: number;
  readonly ttlSeconds: number;
  readonly opTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  readonly mutants: Mutants;
  /**
   * Jeopardy this long after the last answered renewal was sent, capped at TTL − margin (the
   * SDK's renewDeadlineMs); undefined for the SDK's default of 2/3 of the TTL.
   */
  readonly renewDeadlineMs?: number;
}

/** A session granted and marked, or undefined after a failed attempt and a short pause. */
export async function openSession(
  env: ClientEnv,
  prng: Prng,
  record: LeaseRecord,
  opts: LeaseSessionOptions,
): Promise<LeaseSession | undefined> {
  const s = new LeaseSession(env, prng, record, opts);
  if (await s.open()) return s;
  s.abandon();
  await sleep(env, prng.int(10, 50));
  return undefined;
}

export class LeaseSession {
  lease = '';
  private state: SessionState | undefined;
  private stream: ClientStream | undefined;
  /** Renewals sent on the current stream and not answered yet: their sequence and send time. */
  private inFlight: { seq: number; sentMs: number }[] = [];
  private seq = 0;
  private renewing = false;
  private prefer: NodeId | undefined;

  constructor(
    private readonly env: ClientEnv,
    private readonly prng: Prng,
    private readonly record: LeaseRecord,
    private readonly opts: LeaseSessionOptions,
  ) {}

  /** Grant the lease and attach its marker key; false if either failed. */
  async open(): Promise<boolean> {
    const sentMs = this.env.q.now;
    const g = await call(
      this.env,
      this.prng,
      LEASE.grant,
      { TTL: String(this.opts.ttlSeconds), ID: '0' },
      true,
      this.callOptions(),
    );
    if (!g.ok) return false;
    this.prefer = g.node;
    const ttlSeconds = Number(g.response['TTL']);
    this.lease = String(g.response['ID']);
    this.record.renewals.push({
      lease: this.lease,
      client: this.opts.client,
      sentMs,
      answeredMs: this.env.q.now,
      ttlSeconds,
    });
    this.state = new SessionState(
      sessionTiming(
        ttlSeconds,
        this.opts.renewDeadlineMs !== undefined
          ? { renewDeadlineMs: this.opts.renewDeadlineMs }
          : {},
      ),
      { sentAtMs: sentMs, ttlSeconds, atMs: this.env.q.now },
      this.opts.mutants,
    );
    this.renewing = true;
    void this.renewLoop(ttlSeconds);
    const put = await call(
      this.env,
      this.prng,
      '/etcdserverpb.KV/Put',
      {
        key: bytes(leaseMarkerKey(this.lease)),
        value: bytes(`held ${this.lease}`),
        lease: this.lease,
      },
      true,
      this.callOptions(),
    );
    return put.ok;
  }

  /** Whether the SDK would let the holder act now. */
  valid(): boolean {
    const s = this.state;
    if (!s) return false;
    s.step({ type: 'tick', atMs: this.env.q.now });
    return s.validAt(this.env.q.now);
  }

  get expired(): boolean {
    return this.state === undefined || this.state.phase === 'expired';
  }

  /** Stop renewing (the lease runs out on the server). */
  abandon(): void {
    this.renewing = false;
    this.stream?.cancel();
    this.stream = undefined;
  }

  /** Revoke the lease (recorded first: a loss after the send may be this revoke's doing). */
  async revoke(): Promise<void> {
    this.abandon();
    this.record.revocations.push({
      lease: this.lease,
      client: this.opts.client,
      sentMs: this.env.q.now,
    });
    await call(this.env, this.prng, LEASE.revoke, { ID: this.lease }, true, this.callOptions());
  }

  private callOptions(): { timeoutMs: number; attemptTimeoutMs: number; prefer?: NodeId } {
    return {
      timeoutMs: this.opts.opTimeoutMs,
      attemptTimeoutMs: this.opts.attemptTimeoutMs,
      ...(this.prefer !== undefined ? { prefer: this.prefer } : {}),
    };
  }

  private async renewLoop(ttlSeconds: number): Promise<void> {
    const periodMs = (ttlSeconds * 1000) / 3;
    while (this.renewing && !this.expired && this.env.q.now < this.env.stopAtMs) {
      await sleep(this.env, periodMs);
      if (!this.renewing || this.expired) break;
      // An answer overdue by a whole period: the stream is stuck; go elsewhere.
      const oldest = this.inFlight[0];
      if (oldest !== undefined && this.env.q.now - oldest.sentMs >= periodMs) this.dropStream();
      this.sendRenewal();
    }
    this.abandon();
  }

  private sendRenewal(): void {
    const s = this.state;
    if (!s) return;
    this.stream ??= this.openStream();
    const seq = ++this.seq;
    const sentMs = this.env.q.now;
    s.step({ type: 'sent', seq, atMs: sentMs });
    this.inFlight.push({ seq, sentMs });
    this.stream.send({ ID: this.lease });
  }

  private openStream(): ClientStream {
    const members = this.env.members();
    const node =
      this.prefer !== undefined && this.prng.chance(0.7)
        ? this.prefer
        : (members[this.prng.int(0, members.length)] as NodeId);
    this.prefer = node;
    const stream: ClientStream = this.env.channel.bidi(node, LEASE.keepAlive, {
      onResponse: (resp) => {
        if (this.stream !== stream) return;
        // etcd answers a stream's renewals in order, one answer each.
        const r = this.inFlight.shift();
        if (!r || !this.state) return;
        const ttlSeconds = Number(resp['TTL']);
        const answeredMs = this.env.q.now;
        this.state.step({ type: 'answered', seq: r.seq, atMs: answeredMs, ttlSeconds });
        this.record.renewals.push({
          lease: this.lease,
          client: this.opts.client,
          sentMs: r.sentMs,
          answeredMs,
          ttlSeconds,
        });
        if (ttlSeconds <= 0) this.abandon();
      },
      onEnd: () => {
        if (this.stream === stream) this.dropStream();
      },
    });
    return stream;
  }

  private dropStream(): void {
    const s = this.state;
    for (const r of this.inFlight) s?.step({ type: 'failed', seq: r.seq, atMs: this.env.q.now });
    this.inFlight = [];
    this.stream?.cancel();
    this.stream = undefined;
    this.prefer = undefined;
  }
}
