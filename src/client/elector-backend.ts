// What LeaderElector needs of a coordination backend, so one elector runs on etcd's election
// layout (tenure or etcd: `etcdElectorBackend` in leader-elector.ts) and on PostgreSQL
// (`tenure/pg`). A backend gives sessions (a lease kept alive with jeopardy: the same Session
// class on every backend), campaigns that end in a fenced term, and an observer of the leader.
import type { CallOptions } from './call-options.js';
import type { LeaderInfo } from './election.js';
import type { RecipeError } from './recipe-errors.js';
import type { Session, SessionOptions } from './session.js';

/** The leader of the term before this one, as the backend recorded it. */
export interface PreviousLeader {
  /** Its election value (its identity, or whatever it stored: a PID, a host, credentials' id). */
  readonly value: Buffer;
  /** Its fencing token: always smaller than the new term's. */
  readonly token: bigint;
}

/** One term of leadership as LeaderElector drives it (etcd's Leadership, PostgreSQL's too). */
export interface ElectorTerm {
  /** The fencing token of this term; larger than every earlier term's of the same name. */
  readonly token: bigint;
  /** Aborts at session jeopardy, loss of the term, abort() or resign(). */
  readonly signal: AbortSignal;
  /** The leader before this term, or null when none is known (the first term ever). */
  readonly previous: PreviousLeader | null;
  /** True while the term holds and its session is valid (checked now). */
  valid(): boolean;
  /** End the term locally (its signal aborts with `reason`); resign() still releases it. */
  abort(reason: RecipeError): void;
  /** Release the term, fenced on its token; false if it was already lost. */
  resign(options?: CallOptions): Promise<boolean>;
}

/** The leader as it changes: null is "no leader". */
export interface ElectorObserver extends AsyncIterable<LeaderInfo | null> {
  close(): Promise<void>;
}

export interface ElectorBackend {
  /** Aborts when the backend's connection is closed for good: the elector stops with it. */
  readonly closingSignal: AbortSignal;
  /** A fresh session (lease) for one term. */
  session(options: SessionOptions): Promise<Session>;
  /** Wait until `value` leads `name` on `session`, then return the term. */
  campaign(
    name: string,
    session: Session,
    value: Buffer,
    options: CallOptions,
  ): Promise<ElectorTerm>;
  /** Observe the leader of `name` until the signal aborts or close(). */
  observe(name: string, options: { readonly signal?: AbortSignal }): ElectorObserver;
  /**
   * Record `term` (with its election `value`) as the last leader that STARTED, fenced on the term
   * (written only while it holds): what the next term's `previous` is. LeaderElector calls it
   * after fencePrevious succeeded (or was not needed) and before onStartedLeading, so a winner
   * whose fence failed never becomes "previous". False if the term was lost meanwhile. Optional:
   * a backend whose layout keeps the previous leader by itself omits it.
   */
  recordLeader?(
    name: string,
    term: ElectorTerm,
    value: Buffer,
    options: CallOptions,
  ): Promise<boolean>;
  /**
   * Ask that `identity` lead next (leader-elector.ts documents etcd's protocol). Optional: a
   * backend without it makes LeaderElector.handOff throw RecipeError UNSUPPORTED.
   */
  handOff?(
    name: string,
    term: ElectorTerm,
    identity: string,
    ttlSeconds: number,
    options: CallOptions,
  ): Promise<void>;
}
