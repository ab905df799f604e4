// The client: one Connection (channels to every endpoint, failover; connection.ts) and the
// service APIs on top of it.
import { Auth } from './auth.js';
import type { Credentials } from './auth-token.js';
import type { CallOptions } from './call-options.js';
import { Connection } from './connection.js';
import { ClientClosedError } from './errors.js';
import { ChannelSecurity, type TlsOptions } from './tls.js';
import { KV } from './kv.js';
import { Lease } from './lease.js';
import { Session, type SessionOptions } from './session.js';
import { Watcher, type WatchOptions } from './watch.js';
import { decodeHeader, int64, type Bytes } from './codec.js';
import './dispose.js';

export interface ClientOptions {
  /**
   * Member client URLs, the first tried first: `https://host:port` (TLS), `http://host:port`
   * (plain text) or `host:port` (TLS if `tls` is given, else plain text), as clientv3 3.4.
   */
  readonly endpoints: readonly string[];
  /**
   * TLS material for the https:// (and, when given, the bare) endpoints: the CA to trust
   * (default: the system's roots), a client certificate and key for servers that ask for one,
   * the server name to expect. PEM contents, or `caFile`/`certFile`/`keyFile` paths.
   */
  readonly tls?: TlsOptions;
  /**
   * Sign in as this user: connect() authenticates (AuthFailedError for a wrong name or
   * password), every call and stream then carries the token, and a token the cluster stops
   * accepting (expired, member restarted, auth store changed) is replaced and the call sent
   * again, once, without the caller noticing. On a cluster with auth disabled the client goes
   * on without a token.
   */
  readonly auth?: Credentials;
  /**
   * Bound on each call, retries and failover included, unless the call gives `timeoutMs`.
   * Default 5 000 ms (etcd's own request timeout is 5 s + 2 × election timeout).
   */
  readonly defaultTimeoutMs?: number;
  /**
   * Bound on one attempt of a read on one endpoint before trying the next, in ms. Default
   * 2 000 ms. Writes have no per-attempt bound: a write is not retried once sent.
   */
  readonly attemptTimeoutMs?: number;
}

const defaultTimeoutMsDefault = 5_000;
const attemptTimeoutMsDefault = 2_000;

/** Set in Client's static block: the sign-in connect() awaits, which needs the connection. */
let signIn: (client: Client) => Promise<void>;

export class Client implements AsyncDisposable {
  readonly kv: KV;
  readonly lease: Lease;
  /** Users, roles, permissions, enabling auth (etcd's Auth service). */
  readonly auth: Auth;
  readonly #connection: Connection;
  readonly #sessions = new Set<Session>();
  readonly #closing = new AbortController();

  static {
    signIn = async (client) => {
      await client.#connection.token(client.#connection.closedSignal);
    };
  }

  constructor(options: ClientOptions) {
    const auth = options.auth;
    if (auth !== undefined && (typeof auth.username !== 'string' || auth.username === '')) {
      throw new TypeError('tenure/client: auth.username must be a non-empty string');
    }
    this.#connection = new Connection({
      endpoints: options.endpoints,
      defaultTimeoutMs: options.defaultTimeoutMs ?? defaultTimeoutMsDefault,
      attemptTimeoutMs: options.attemptTimeoutMs ?? attemptTimeoutMsDefault,
      security: new ChannelSecurity(options.tls),
      ...(auth === undefined ? {} : { credentials: auth }),
    });
    this.kv = new KV(this.#connection);
    this.lease = new Lease(this.#connection);
    this.auth = new Auth(this.#connection);
  }

  /** Authenticate calls that succeeded so far (0 without `auth`): one per token obtained. */
  get authentications(): number {
    return this.#connection.tokens?.authentications ?? 0;
  }

  /** The endpoints as `host:port`, in configuration order. */
  get endpoints(): readonly string[] {
    return this.#connection.endpoints.all;
  }

  /** The endpoint the next call will try first. */
  get preferredEndpoint(): string {
    return this.#connection.endpoints.preferred;
  }

  /** Watch a key or range; see watch.ts for the resume and compaction rules. */
  watch(key: Bytes, options: WatchOptions = {}): Watcher {
    return new Watcher(this.#connection, key, options);
  }

  /** Aborts with ClientClosedError when close() begins: what relies on this client stops then. */
  get closingSignal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Grant (or reuse) a lease and keep it alive as a Session; see session.ts. */
  async session(options: SessionOptions = {}): Promise<Session> {
    // A session made while close() revokes the others would be missed by it (its lease would
    // live out its TTL on the server).
    this.#closing.signal.throwIfAborted();
    const s = await Session.create(
      options.transport ?? this.lease,
      options,
      this.#connection.defaultTimeoutMs,
    );
    if (this.#closing.signal.aborted) {
      await s.close().catch(() => undefined);
      this.#closing.signal.throwIfAborted();
    }
    this.#sessions.add(s);
    void s.closed().then(() => this.#sessions.delete(s));
    return s;
  }

  /** Maintenance.Status of one endpoint (default: the preferred one), no failover. */
  async status(
    endpoint?: string,
    options: CallOptions = {},
  ): Promise<{ memberId: bigint; leader: bigint; raftTerm: bigint; version: string }> {
    const ep = endpoint ?? this.#connection.endpoints.preferred;
    const single = new Connection({
      endpoints: [this.#connection.endpoints.url(ep)],
      defaultTimeoutMs: this.#connection.defaultTimeoutMs,
      attemptTimeoutMs: this.#connection.attemptTimeoutMs,
      security: this.#connection.security,
      ...(this.#connection.tokens === undefined ? {} : { tokens: this.#connection.tokens }),
    });
    try {
      const w = await single.unary<Record<string, unknown>>('Maintenance.Status', {}, 'read', {
        ...options,
        timeoutMs: options.timeoutMs ?? this.#connection.attemptTimeoutMs,
      });
      return {
        memberId: decodeHeader(w.header).memberId,
        leader: int64(w.leader),
        raftTerm: int64(w.raftTerm),
        version: typeof w.version === 'string' ? w.version : '',
      };
    } finally {
      single.close();
    }
  }

  /**
   * Close every open session (revoking its lease, bounded), then every channel. Calls in flight
   * fail with ClientClosedError; watchers end (one made afterwards fails with ClientClosedError);
   * lock grants and leaderships are lost and electors stop as soon as close() begins (see
   * `closingSignal`); keepalive handles end at their next renewal. No session can be created once
   * close() has begun. Idempotent.
   */
  async close(): Promise<void> {
    this.#closing.abort(new ClientClosedError('CLIENT_CLOSED', 'tenure/client: closed'));
    await Promise.allSettled([...this.#sessions].map((s) => s.close()));
    this.#connection.close();
  }

  /** Resolves once close() has been called and finished. */
  async closed(): Promise<void> {
    if (this.#connection.isClosed) return;
    await new Promise<void>((resolve) =>
      this.#connection.closedSignal.addEventListener('abort', () => resolve(), { once: true }),
    );
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Create a client. Without `auth`, channels connect lazily, on the first call; with `auth`, the
 * client authenticates first and connect() rejects with that failure (AuthFailedError, or
 * UnavailableError / TimeoutError when no member answered), the client closed.
 */
export async function connect(options: ClientOptions): Promise<Client> {
  const client = new Client(options);
  if (options.auth === undefined) return client;
  try {
    await signIn(client);
  } catch (e) {
    await client.close();
    throw e;
  }
  return client;
}
