// The Lease service (etcd's rpc.proto, service Lease): grant, revoke, time-to-live, list, and
// keepalive — one renewal (`keepAliveOnce`, on a short bidirectional stream, as Go's KeepAliveOnce
// does) and a self-renewing handle (`keepAlive`) that follows Go's cadence: the next renewal is due
// TTL/3 after each answer, and the handle ends when an answer says TTL ≤ 0 (LeaseNotFoundError) or
// no answer has arrived within TTL of the last one (Go's client/v3/lease.go: recvKeepAlive and
// deadlineLoop).
//
// For a lease whose loss must be noticed *before* the server may have expired it, use a Session
// (session.ts), which measures from the moment a renewal was sent, not answered.
import { linkAbort } from './recipe-signal.js';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { sleep, type CallOptions } from './call-options.js';
import { decodeHeader, int64, type ResponseHeader, type WireObject } from './codec.js';
import type { Connection } from './connection.js';
import {
  ClientClosedError,
  EtcdError,
  LeaseNotFoundError,
  UnavailableError,
  grpcFailure,
} from './errors.js';
import { AsyncQueue } from '../core/base/async-queue.js';
import './dispose.js';

export interface LeaseGrantResult {
  readonly header: ResponseHeader;
  readonly id: bigint;
  /** The TTL granted, which the server may have raised to its minimum (2 s on etcd). */
  readonly ttlSeconds: number;
}

export interface LeaseTimeToLiveResult {
  readonly header: ResponseHeader;
  readonly id: bigint;
  /** Remaining whole seconds, truncated; −1 when the lease does not exist. */
  readonly ttlSeconds: number;
  readonly grantedTtlSeconds: number;
  readonly keys: readonly Buffer[];
}

export interface KeepAliveResult {
  readonly header: ResponseHeader;
  readonly id: bigint;
  /** The TTL the renewal granted (> 0; a 0 answer is thrown as LeaseNotFoundError). */
  readonly ttlSeconds: number;
}

// Named limits.
/** Answers a keepAlive handle holds for a consumer that does not read them (oldest dropped). */
const keepAliveAnswersBufferedMax = 16;
/** Pause after a failed renewal before the next try, in a keepAlive handle. */
const keepAliveRetryMs = 500;

export class Lease {
  readonly #connection: Connection;

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  /** LeaseGrant (a write). `id` asks for a specific ID (LeaseExistsError if in use). */
  async grant(
    ttlSeconds: number,
    options: { readonly id?: bigint } & CallOptions = {},
  ): Promise<LeaseGrantResult> {
    const req = { TTL: `${ttlSeconds}`, ID: `${options.id ?? 0n}` };
    const w = await this.#connection.unary<WireObject>('Lease.LeaseGrant', req, 'write', options);
    if (typeof w.error === 'string' && w.error !== '') {
      throw new EtcdError('UNKNOWN', `LeaseGrant: ${w.error}`, { serverMessage: w.error });
    }
    return { header: decodeHeader(w.header), id: int64(w.ID), ttlSeconds: Number(w.TTL) };
  }

  /** LeaseRevoke (a write): deletes every attached key. LeaseNotFoundError if unknown. */
  async revoke(id: bigint, options: CallOptions = {}): Promise<ResponseHeader> {
    const w = await this.#connection.unary<WireObject>(
      'Lease.LeaseRevoke',
      { ID: `${id}` },
      'write',
      options,
    );
    return decodeHeader(w.header);
  }

  /** LeaseTimeToLive (a read). An unknown lease is not an error: `ttlSeconds` is −1. */
  async timeToLive(
    id: bigint,
    options: { readonly keys?: boolean } & CallOptions = {},
  ): Promise<LeaseTimeToLiveResult> {
    const req = { ID: `${id}`, keys: options.keys ?? false };
    const w = await this.#connection.unary<WireObject>(
      'Lease.LeaseTimeToLive',
      req,
      'read',
      options,
    );
    return {
      header: decodeHeader(w.header),
      id: int64(w.ID),
      ttlSeconds: Number(w.TTL),
      grantedTtlSeconds: Number(w.grantedTTL),
      keys: Array.isArray(w.keys) ? (w.keys as Buffer[]) : [],
    };
  }

  /** LeaseLeases (a read): the IDs of every lease. */
  async leases(options: CallOptions = {}): Promise<bigint[]> {
    const w = await this.#connection.unary<WireObject>('Lease.LeaseLeases', {}, 'read', options);
    const list = Array.isArray(w.leases) ? (w.leases as WireObject[]) : [];
    return list.map((l) => int64(l.ID));
  }

  /**
   * Renew once. Renewing is idempotent, so it is retried across endpoints like a read. Throws
   * LeaseNotFoundError when the server answers TTL ≤ 0 (etcd's v3rpc leaseKeepAlive sends no stream
   * error for an unknown lease).
   */
  async keepAliveOnce(id: bigint, options: CallOptions = {}): Promise<KeepAliveResult> {
    const w = await this.#connection.withFailover(
      'Lease.LeaseKeepAlive',
      'read',
      options,
      (endpoint, deadlineMs, signal, token) => this.#renew(endpoint, id, deadlineMs, signal, token),
    );
    const ttlSeconds = Number(w.TTL);
    if (!(ttlSeconds > 0)) {
      throw new LeaseNotFoundError(
        'LEASE_NOT_FOUND',
        `lease ${id} not found (keepalive answered TTL ${ttlSeconds})`,
      );
    }
    return { header: decodeHeader(w.header), id, ttlSeconds };
  }

  /** One renewal on a fresh stream to `endpoint`; rejects with a gRPC-shaped failure. */
  #renew(
    endpoint: string,
    id: bigint,
    deadlineMs: number,
    signal: AbortSignal,
    token: string | undefined,
  ): Promise<WireObject> {
    return new Promise<WireObject>((resolve, reject) => {
      const call = this.#connection.bidi('Lease.LeaseKeepAlive', endpoint, true, token);
      let done = false;
      const finish = (settle: () => void): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        call.cancel();
        settle();
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(grpcFailure(GrpcStatus.DEADLINE_EXCEEDED, 'keepalive: no answer in time')),
          ),
        Math.max(0, deadlineMs - Date.now()),
      );
      const onAbort = (): void => finish(() => reject(signal.reason as Error));
      signal.addEventListener('abort', onAbort, { once: true });
      call.on('data', (r: WireObject) => {
        if (int64(r.ID) === id || int64(r.ID) === 0n) finish(() => resolve(r));
      });
      // After finish(), cancel() makes the stream emit a CANCELLED error: ignored.
      call.on('error', (e) => finish(() => reject(e)));
      call.on('end', () =>
        finish(() => reject(grpcFailure(GrpcStatus.UNAVAILABLE, 'keepalive stream ended'))),
      );
      call.write({ ID: `${id}` });
    });
  }

  /**
   * Keep `id` alive until closed: renew TTL/3 after each answer (Go's cadence, client/v3/lease.go).
   * The handle yields every answer; it ends with LeaseNotFoundError when the lease is gone, or with
   * UnavailableError when no renewal was answered within TTL of the last answer.
   */
  keepAlive(id: bigint, options: { readonly signal?: AbortSignal } = {}): LeaseKeepAlive {
    return new LeaseKeepAlive(this, id, options.signal);
  }
}

/** A self-renewing lease; AsyncIterable of the renewal answers. */
export class LeaseKeepAlive implements AsyncIterable<KeepAliveResult>, AsyncDisposable {
  readonly id: bigint;
  readonly #lease: Lease;
  readonly #stop = new AbortController();
  /** The newest answers: a consumer that falls behind loses the oldest. */
  readonly #answers = new AsyncQueue<KeepAliveResult>({ max: keepAliveAnswersBufferedMax });
  readonly #done: Promise<void>;
  #error: unknown;

  constructor(lease: Lease, id: bigint, signal: AbortSignal | undefined) {
    this.#lease = lease;
    this.id = id;
    // Linked for the handle's life only: a long-lived caller signal must not collect listeners.
    const unlink = signal === undefined ? () => undefined : linkAbort(signal, this.#stop);
    this.#done = this.#run().finally(unlink);
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    let lastAnswerMs = performance.now();
    let ttlMs = Number.POSITIVE_INFINITY;
    try {
      for (;;) {
        try {
          const a = await this.#lease.keepAliveOnce(this.id, { signal, timeoutMs: 5_000 });
          lastAnswerMs = performance.now();
          ttlMs = a.ttlSeconds * 1000;
          this.#answers.push(a);
          await sleep(ttlMs / 3, signal);
        } catch (e) {
          if (signal.aborted || e instanceof LeaseNotFoundError || e instanceof ClientClosedError) {
            throw e;
          }
          if (performance.now() - lastAnswerMs >= ttlMs) {
            throw new UnavailableError(
              'UNAVAILABLE',
              `lease ${this.id}: no keepalive answered within its TTL`,
              { cause: e },
            );
          }
          await sleep(keepAliveRetryMs, signal);
        }
      }
    } catch (e) {
      if (!signal.aborted) this.#error = e;
      this.#answers.end(signal.aborted ? undefined : (e as Error));
    }
  }

  /** Resolves when the handle has stopped: with undefined if closed, else with the error. */
  async closed(): Promise<unknown> {
    await this.#done;
    return this.#error;
  }

  /** Stop renewing (the lease is not revoked; it expires after its TTL). */
  async close(): Promise<void> {
    this.#stop.abort(new Error('keepalive closed'));
    await this.#done;
  }

  [Symbol.asyncIterator](): AsyncIterator<KeepAliveResult> {
    return this.#answers[Symbol.asyncIterator]();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
