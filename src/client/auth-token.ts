// The auth token of a client with credentials (etcd's Auth.Authenticate; the token then goes as
// gRPC metadata `token` with every call and stream, rpctypes.TokenFieldNameGRPC).
//
// One Authenticate at a time (single flight): every call that finds no token yet, or whose token
// was refused, waits for the same Authenticate instead of starting its own, so a member restart
// seen by a hundred calls in flight costs one Authenticate, not a hundred. A refusal of a token
// that has been replaced meanwhile does not authenticate again: the caller takes the new one.
//
// A cluster whose auth is disabled answers Authenticate with AuthNotEnabledError; the client then
// goes on without a token, as clientv3 3.4 does (clientv3/client.go, dial), and
// authenticates once a call is refused with `user name is empty` (auth enabled since), as
// clientv3 3.5 does (client/v3/client.go, shouldRefreshToken).
import { AuthNotEnabledError } from './errors.js';

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** One Authenticate (with its own failover and deadline); resolves with the token. */
export type Authenticate = () => Promise<string>;

export class TokenSource {
  readonly #authenticate: Authenticate;
  #token: string | undefined;
  /** The cluster said auth is disabled: calls go without a token until one is refused. */
  #disabled = false;
  #inflight: Promise<string | undefined> | undefined;
  #authentications = 0;

  constructor(authenticate: Authenticate) {
    this.#authenticate = authenticate;
  }

  /** The token requests carry now (undefined: none yet, or auth is disabled). */
  get current(): string | undefined {
    return this.#token;
  }

  /** Authenticate calls that succeeded so far (each one a new token). */
  get authentications(): number {
    return this.#authentications;
  }

  /** The token for a new request: the current one, or that of a first (shared) Authenticate. */
  get(signal: AbortSignal): Promise<string | undefined> {
    if (this.#token !== undefined || this.#disabled) return Promise.resolve(this.#token);
    return this.#shared(signal);
  }

  /**
   * `stale` (the token a request carried; undefined if none) was refused: a fresh token, from an
   * Authenticate shared with every caller refused meanwhile, or the one that has already
   * replaced `stale`. Rejects with Authenticate's error (AuthFailedError if the password changed).
   * `signal` ends this caller's wait only, never the shared Authenticate.
   */
  refresh(stale: string | undefined, signal: AbortSignal): Promise<string | undefined> {
    if (this.#token !== stale) return Promise.resolve(this.#token);
    return this.#shared(signal);
  }

  #shared(signal: AbortSignal): Promise<string | undefined> {
    this.#inflight ??= this.#run().finally(() => {
      this.#inflight = undefined;
    });
    return untilAborted(this.#inflight, signal);
  }

  async #run(): Promise<string | undefined> {
    try {
      const token = await this.#authenticate();
      this.#token = token;
      this.#disabled = false;
      this.#authentications++;
      return token;
    } catch (e) {
      if (!(e instanceof AuthNotEnabledError)) throw e;
      this.#token = undefined;
      this.#disabled = true;
      return undefined;
    }
  }
}

/** `p`, or a rejection with `signal.reason` once `signal` aborts first. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, reject);
  });
}
