// One gRPC channel per member endpoint, unary calls with failover, and bidirectional streams.
//
// The failover rule (a client must neither hide nor duplicate a write; docs/leases-and-time.md,
// "Requests a member gives up on"):
//
// - A *read* (Range, a Txn without writes, LeaseTimeToLive, LeaseLeases, Status, a keepalive —
//   renewing twice is harmless) that fails with an Unavailable-class error (connection failure,
//   `etcdserver: no leader`, `leader changed`, `request timed out`, `server stopped`) or whose
//   attempt runs past `attemptTimeoutMs` is retried on the next endpoint, round robin, with a
//   short backoff after each full round, until the call's `timeoutMs` is spent.
// - A *write* (Put, DeleteRange, a Txn with a Put or Delete, LeaseGrant, LeaseRevoke, Compact) is
//   retried on the next endpoint only when the failure proves the request was not done: grpc-js
//   reports "No connection established" (the channel could not connect), or the member answered
//   with a refusal it gives only for what it did not do (`no leader`, `not leader`, `leader
//   changed`, `too many requests`; REFUSALS below). Any other
//   Unavailable-class failure after the request may have been sent (connection dropped mid-call,
//   server-side timeout) is reported as UnknownOutcomeError and NOT retried, because a Put or a
//   Txn applied twice is a different history. A TimeoutError from a write likewise means the
//   outcome is unknown. The caller decides (usually: read back, or retry a Txn whose compares make
//   it idempotent).
// - Every other error (InvalidArgument, LeaseNotFound, Compacted, ...) is the server's answer and
//   is thrown at once.
// - With credentials, a call refused for its token (invalid or expired token, auth store revision
//   moved on, no token while auth is on: errors.ts, isTokenRefusal) authenticates again (shared
//   with every call refused meanwhile: auth-token.ts) and is sent once more, to the same endpoint,
//   read or write alike. A second refusal is thrown. Retrying a write here is safe because each
//   of those refusals is decided before the request is applied; clientv3 does the same, refreshing
//   the token and retrying before it asks whether the call may be retried at all
//   (clientv3/retry_interceptor.go, unaryClientInterceptor: the ErrInvalidAuthToken branch comes
//   before isSafeRetry).
import { setMaxListeners } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { CallScope, type CallOptions } from './call-options.js';
import { TokenSource, type Credentials } from './auth-token.js';
import { Endpoints } from './endpoints.js';
import {
  ClientClosedError,
  TimeoutError,
  UnavailableError,
  UnknownOutcomeError,
  errorFromGrpc,
  isGrpcFailure,
  isTokenRefusal,
  type EtcdError,
  type GrpcFailure,
} from './errors.js';
import { method, type MethodName } from './protos.js';
import { ChannelSecurity } from './tls.js';

export type CallKind = 'read' | 'write';

export interface ConnectionOptions {
  readonly endpoints: readonly string[];
  readonly defaultTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  /** Channel credentials (tls.ts); default: no TLS material (https:// uses the system roots). */
  readonly security?: ChannelSecurity;
  /** Authenticate with these and send the token with every call and stream. */
  readonly credentials?: Credentials;
  /** Use this token source (another connection's) instead of one for `credentials`. */
  readonly tokens?: TokenSource;
}

/** One attempt of a call on one endpoint, carrying `token` (undefined: none). */
export type Attempt<T> = (
  endpoint: string,
  deadlineMs: number,
  signal: AbortSignal,
  token: string | undefined,
) => Promise<T>;

/** The gRPC metadata key of the auth token (etcd's rpctypes.TokenFieldNameGRPC). */
const tokenMetadataKey = 'token';

// Named limits.
/** Full rounds over the endpoints one call may make (each round ends with a backoff). */
const roundsPerCallMax = 16;
/** Backoff after the first full round of failures, doubled per round up to the max. */
const roundBackoffMsMin = 50;
const roundBackoffMsMax = 1_000;
/**
 * A write's gRPC deadline is set this much past the call's own deadline, so that the call's
 * TimeoutError (not a server DEADLINE_EXCEEDED, which would read as an unknown outcome) ends it.
 */
const writeDeadlineSlackMs = 1_000;

/**
 * Channel options: HTTP/2 pings find a dead peer (e.g. a SIGSTOPped member) within about 15 s;
 * the intervals respect etcd's server-side ping policy (--grpc-keepalive-min-time 5 s). Reconnect
 * backoff is kept short because a restarted member should be used again quickly.
 */
const channelOptions: grpc.ChannelOptions = {
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1_000,
};

/**
 * The call's own deadline passed: say what the last attempt ran into (a TLS handshake refused, a
 * member down), which the bare timeout would hide.
 */
function withLastFailure(timeout: unknown, last: EtcdError | undefined): unknown {
  if (!(timeout instanceof TimeoutError) || last === undefined) return timeout;
  return new TimeoutError('TIMEOUT', `${timeout.message}; last failure: ${last.message}`, {
    cause: last,
    ...(last.endpoint === undefined ? {} : { endpoint: last.endpoint }),
  });
}

/** True when grpc-js failed the call before sending it: the channel had no connection. */
export function neverSent(e: GrpcFailure): boolean {
  return (
    e.code === (grpc.status.UNAVAILABLE as number) && /No connection established/.test(e.details)
  );
}

type Verdict = 'retry' | 'unknown' | 'fatal';

/**
 * Answers a member gives only when it did nothing and will do nothing with the request, on
 * tenure (its REFUSAL_MESSAGES) and on etcd 3.4 alike: `no leader` is the gRPC interceptor's
 * answer before the request is looked at; `not leader` and `leader changed` come from lease and
 * read paths that propose nothing (v3_server.go); `too many requests` is refused before the
 * proposal. A write refused so is safe to send to the next member at once: the deposed leader
 * let go of it, so the client moves on without waiting out a timeout (issue 19).
 */
const REFUSALS: ReadonlySet<string> = new Set([
  'etcdserver: no leader',
  'etcdserver: not leader',
  'etcdserver: leader changed',
  'etcdserver: too many requests',
]);

function classify(e: GrpcFailure, typed: EtcdError, kind: CallKind): Verdict {
  if (neverSent(e)) return 'retry';
  if (REFUSALS.has(e.details)) return 'retry';
  const transient =
    typed instanceof UnavailableError || e.code === (grpc.status.DEADLINE_EXCEEDED as number);
  // A stream reset or a server bug (INTERNAL) after the request went out says nothing about
  // whether a write was applied: for a write that is an unknown outcome, not a refusal.
  if (kind === 'write' && e.code === (grpc.status.INTERNAL as number)) return 'unknown';
  if (!transient) return 'fatal';
  return kind === 'read' ? 'retry' : 'unknown';
}

export class Connection {
  readonly endpoints: Endpoints;
  readonly defaultTimeoutMs: number;
  readonly attemptTimeoutMs: number;
  readonly security: ChannelSecurity;
  /** Undefined without credentials: calls then carry no token. */
  readonly tokens: TokenSource | undefined;
  readonly #clients = new Map<string, grpc.Client>();
  readonly #closed = new AbortController();

  constructor(options: ConnectionOptions) {
    // Every call and stream listens for the close while it runs and stops listening when it
    // settles (CallScope.dispose), so the listeners count the calls in flight: Node's warning at
    // 11 ("possible EventTarget memory leak") would fire in any application with 11 calls at once.
    setMaxListeners(0, this.#closed.signal);
    this.endpoints = new Endpoints(options.endpoints);
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.attemptTimeoutMs = options.attemptTimeoutMs;
    this.security = options.security ?? new ChannelSecurity(undefined);
    const creds = options.credentials;
    this.tokens =
      options.tokens ??
      (creds === undefined ? undefined : new TokenSource(() => this.#authenticate(creds)));
  }

  /** Aborted when the connection is closed. */
  get closedSignal(): AbortSignal {
    return this.#closed.signal;
  }

  get isClosed(): boolean {
    return this.#closed.signal.aborted;
  }

  #client(endpoint: string): grpc.Client {
    if (this.isClosed) throw new ClientClosedError('CLIENT_CLOSED', 'tenure/client: closed');
    let c = this.#clients.get(endpoint);
    if (c === undefined) {
      const secure = this.security.secure(this.endpoints.scheme(endpoint));
      c = new grpc.Client(endpoint, this.security.credentials(secure), {
        ...channelOptions,
        ...this.security.channelOptions(secure),
      });
      this.#clients.set(endpoint, c);
    }
    return c;
  }

  /** The token for a stream about to be made (authenticating first if there is none yet). */
  token(signal: AbortSignal): Promise<string | undefined> {
    return this.tokens?.get(signal) ?? Promise.resolve(undefined);
  }

  /**
   * `stale` was refused by a server: a fresh token (see auth-token.ts), or undefined without
   * credentials (the refusal is then final).
   */
  refreshToken(stale: string | undefined, signal: AbortSignal): Promise<string | undefined> {
    return this.tokens?.refresh(stale, signal) ?? Promise.resolve(undefined);
  }

  /** Authenticate with `creds` (no token sent, no re-authentication); resolves with the token. */
  async #authenticate(creds: Credentials): Promise<string> {
    const request = { name: creds.username, password: creds.password };
    // Like a read for failover: a second Authenticate only issues a second token, which the
    // member forgets after its TTL (etcd's --auth-token-ttl).
    const w = await this.#failover<Record<string, unknown>>(
      'Auth.Authenticate',
      'read',
      {},
      (endpoint, deadlineMs, signal) =>
        this.#attempt('Auth.Authenticate', endpoint, request, deadlineMs, signal, undefined),
      false,
    );
    const token = w.token;
    if (typeof token !== 'string' || token === '') {
      throw new UnavailableError('UNAVAILABLE', 'Authenticate: the answer carried no token');
    }
    return token;
  }

  #metadata(token: string | undefined): grpc.Metadata {
    const md = new grpc.Metadata();
    if (token !== undefined) md.set(tokenMetadataKey, token);
    return md;
  }

  /** A CallScope bound to this connection's default timeout and close. */
  scope(options: CallOptions, what: string): CallScope {
    return new CallScope(options, this.defaultTimeoutMs, this.#closed.signal, what);
  }

  /** A unary call with the failover rule above. */
  unary<Res>(
    name: MethodName,
    request: object,
    kind: CallKind,
    options: CallOptions,
  ): Promise<Res> {
    return this.withFailover(name, kind, options, (endpoint, deadlineMs, signal, token) =>
      this.#attempt<Res>(name, endpoint, request, deadlineMs, signal, token),
    );
  }

  /**
   * Run `attempt` on one endpoint after another under the failover rule above, with the token (if
   * the client has credentials; re-authenticating once on a refusal). `attempt` must reject with
   * the gRPC failure (code and details) or, once `signal` is aborted, with anything.
   */
  withFailover<T>(
    name: string,
    kind: CallKind,
    options: CallOptions,
    attempt: Attempt<T>,
  ): Promise<T> {
    return this.#failover(name, kind, options, attempt, true);
  }

  async #failover<T>(
    name: string,
    kind: CallKind,
    options: CallOptions,
    attempt: Attempt<T>,
    withToken: boolean,
  ): Promise<T> {
    const scope = this.scope(options, name);
    const tokens = withToken ? this.tokens : undefined;
    let last: EtcdError | undefined;
    /** One re-authentication per call: a fresh token refused again is the answer. */
    let reauthenticated = false;
    try {
      for (let round = 0; round < roundsPerCallMax; round++) {
        for (const endpoint of this.endpoints.order()) {
          // A second pass on the same endpoint only after a re-authentication.
          for (let pass = 0; pass < 2; pass++) {
            scope.throwIfAborted();
            const token = tokens === undefined ? undefined : await tokens.get(scope.signal);
            // gRPC takes its deadline on the wall clock and turns it into a relative timeout
            // when the attempt starts, right away: the call's own bound stays on the monotonic
            // clock.
            const deadlineMs =
              Date.now() +
              (kind === 'read'
                ? Math.min(scope.remainingMs(), this.attemptTimeoutMs)
                : scope.remainingMs() + writeDeadlineSlackMs);
            try {
              return await attempt(endpoint, deadlineMs, scope.signal, token);
            } catch (e) {
              if (scope.signal.aborted) throw scope.signal.reason;
              if (!isGrpcFailure(e)) throw e;
              const typed = errorFromGrpc(e, endpoint);
              if (tokens !== undefined && !reauthenticated && isTokenRefusal(typed)) {
                // Refused before it was applied (see the rule above): authenticate, send again.
                reauthenticated = true;
                await tokens.refresh(token, scope.signal);
                continue;
              }
              const verdict = classify(e, typed, kind);
              if (verdict === 'fatal') throw typed;
              this.endpoints.failed(endpoint);
              if (verdict === 'unknown') {
                throw new UnknownOutcomeError(
                  'UNKNOWN_OUTCOME',
                  `${name} via ${endpoint} failed after it may have been sent (${e.details}); ` +
                    'it may or may not have been applied and was not retried',
                  { cause: typed, endpoint, grpcCode: e.code, serverMessage: e.details },
                );
              }
              last = typed;
              break;
            }
          }
        }
        await scope.sleep(Math.min(roundBackoffMsMax, roundBackoffMsMin * 2 ** round));
      }
      throw last ?? new UnavailableError('UNAVAILABLE', `${name}: no endpoint answered`);
    } catch (e) {
      throw scope.timedOut && e === scope.signal.reason ? withLastFailure(e, last) : e;
    } finally {
      scope.dispose();
    }
  }

  #attempt<Res>(
    name: MethodName,
    endpoint: string,
    request: object,
    deadlineMs: number,
    signal: AbortSignal,
    token: string | undefined,
  ): Promise<Res> {
    const m = method(name);
    const client = this.#client(endpoint);
    return new Promise<Res>((resolve, reject) => {
      const call = client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        request,
        this.#metadata(token),
        { deadline: deadlineMs },
        (err, res) => {
          signal.removeEventListener('abort', onAbort);
          if (err !== null || res === undefined) reject(err ?? new Error(`${name}: no response`));
          else resolve(res as Res);
        },
      );
      const onAbort = (): void => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * A bidirectional stream to `endpoint`. `requireLeader` sets etcd's `hasleader` metadata
   * (as clientv3.WithRequireLeader does), so a member that loses its leader ends the stream with
   * `etcdserver: no leader` instead of leaving it silent; the caller then reconnects elsewhere.
   * The stream carries `token` (default: the current one, if any).
   */
  bidi(
    name: MethodName,
    endpoint: string,
    requireLeader: boolean,
    token: string | undefined = this.tokens?.current,
  ): grpc.ClientDuplexStream<object, Record<string, unknown>> {
    const m = method(name);
    const md = this.#metadata(token);
    if (requireLeader) md.set('hasleader', 'true');
    return this.#client(endpoint).makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      md,
    );
  }

  /** Close every channel; calls in flight fail with ClientClosedError. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    this.#closed.abort(new ClientClosedError('CLIENT_CLOSED', 'tenure/client: closed'));
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
  }
}
