// LeaderElector: Kubernetes client-go style leader election (tools/leaderelection) on etcd's
// election layout, but fenced (client-go's leaderelection.go says outright that it does not
// guarantee that only one client is acting as a leader, "a.k.a. fencing").
//
//   const elector = new LeaderElector(client, {
//     name: 'scheduler', identity: hostname,
//     onStartedLeading: async ({ signal, token }) => { ... pass token to every write ... },
//     onStoppedLeading: () => log('stopped leading'),
//     onNewLeader: (identity) => log('leader is', identity),
//   }).start();
//   ...
//   await elector.stop(); // or `await using elector = ...`
//
// Life cycle. Each term runs on a fresh Session: campaign → onStartedLeading({ signal, token }) →
// the signal aborts (session jeopardy, own key gone, stop(), handOff()) → wait until the callback
// has settled → resign (fenced) → onStoppedLeading() → close the session → campaign again with a
// new session (unless stopped). A callback that returns early keeps leadership until the signal
// aborts (as in client-go). Leadership is dropped the moment the session enters jeopardy — while
// the server still certainly holds the lease — instead of client-go's RenewDeadline wait, and the
// token lets resources reject the old leader's late writes. onStoppedLeading is called only after
// an onStartedLeading (client-go#1187). onNewLeader(identity | null) is called for every new term
// (the token changed, even for the same identity) and for "no leader".
//
// Backends. The elector runs over an ElectorBackend (elector-backend.ts): given a Client it uses
// `etcdElectorBackend` (elector-etcd.ts: etcd's election layout on tenure or etcd, with the
// hand-off protocol below); another backend (PostgreSQL) is passed as is. `LeadingContext.term`
// is the backend's term; `LeadingContext.leadership` and the `leadership` getter are the etcd
// Leadership (proclaim, isLeader() as a Txn compare) on the etcd backend, undefined on others.
//
// Stuck leaders (progressDeadlineMs, docs/stuck-leaders.md). A leader can renew its session while
// its callback makes no progress (a hung call, a deadlock): the lease alone never replaces it.
// With a deadline, a callback that does not call progress() in time is STUCK
// (progress-watchdog.ts): its signal aborts, its session is abandoned (renewals stop, no revoke),
// and the term is released only after the callback settles, as for any term. Revoking or
// resigning at once would let the next leader start while the stuck one may still be acting;
// letting the lease run out gives the next leader a larger token and the same guarantee as after
// a crashed leader.
//
// Fencing the previous leader (fencePrevious, STONITH). At victory the backend gives the leader
// of the term before (`term.previous`: on etcd the `name.last` record, elector-etcd.ts). If there
// is one and a hook is set, the hook must succeed within fencePreviousTimeoutMs before
// onStartedLeading runs; then the term is recorded as the last that started (recordLeader),
// fenced on its own key. A winner whose fence failed resigns without being recorded, so the next
// winner fences the same previous leader. The record is written with or without a hook, so the
// first elector configured with one still knows who led.
//
// Hand-off protocol (works on vanilla etcd: plain keys and leases; foreign candidates such as
// `etcdctl elect` do not know it and simply keep their FIFO place):
//   1. The leader writes the hint `name.handoff` = {"to": successor, "fromToken": token}, in a Txn
//      fenced on its own leader key (so only the current leader can write it), attached to a new
//      lease of `handOffTtlSeconds` that nobody renews: a hint can never outlive that TTL.
//   2. The leader aborts its term: its callback settles, it resigns (fenced delete). It then
//      campaigns again, at the back of the queue.
//   3. A campaigner that reaches the head of the queue reads the hint and the candidates in one
//      read. If the hint names another identity that is a live candidate (its key exists), it
//      steps back: deletes its key (fenced) and re-queues at the back. Each campaigner yields at
//      most once per hint (by the hint's mod revision), so a stale hint costs at most one round.
//   4. The successor reaches the head, wins as usual (own-key Txn check, session valid), and
//      deletes the hint (fenced on its mod revision).
// If the successor is not a candidate, or dies meanwhile, the hint is ignored and the FIFO order
// decides; the hint lease expires regardless.
import { sleep, type CallOptions } from './call-options.js';
import { Client } from './client.js';
import type {
  ElectorBackend,
  ElectorObserver,
  ElectorTerm,
  PreviousLeader,
} from './elector-backend.js';
import { EtcdTerm, etcdElectorBackend } from './elector-etcd.js';
import type { LeaderInfo, Leadership } from './election.js';
import { RecipeError, type RecipeTrace } from './recipe-errors.js';
import { ProgressWatchdog } from './progress-watchdog.js';
import { linkAbort } from './recipe-signal.js';
import type { Session, SessionOptions } from './session.js';
import './dispose.js';

/** What onStartedLeading gets. */
export interface LeadingContext {
  /** Aborts when leadership must stop; `aborted` is computed when read. */
  readonly signal: AbortSignal;
  /** The fencing token of this term. */
  readonly token: bigint;
  /** This term as the backend gives it. */
  readonly term: ElectorTerm;
  /** The etcd Leadership of this term (proclaim, isLeader()); undefined on other backends. */
  readonly leadership: Leadership | undefined;
  /** Report progress: restarts the progressDeadlineMs count (a no-op without a deadline). */
  readonly progress: () => void;
}

export interface LeaderElectorOptions {
  /** The election name (etcd layout: candidates are `name/<lease hex>`). */
  readonly name: string;
  /** This candidate's identity, stored as the candidate key's value. */
  readonly identity: string;
  /**
   * Session (lease) TTL in seconds; default 15 (client-go's LeaseDuration). A dead leader is
   * replaced about TTL + one renewal interval after its last renewal; leadership stops at
   * jeopardy (2/3 TTL without renewal by default).
   */
  readonly ttlSeconds?: number;
  /** Further session options (drift margin, renew deadline, grace period, clock). */
  readonly session?: Omit<SessionOptions, 'ttlSeconds' | 'leaseId' | 'signal' | 'timeoutMs'>;
  /** Pause after a failed session grant or campaign before trying again, in ms. Default 1 000. */
  readonly retryIntervalMs?: number;
  /** Lifetime of a hand-off hint, in seconds. Default 15. */
  readonly handOffTtlSeconds?: number;
  /**
   * The longest onStartedLeading may go without calling `ctx.progress()`, in ms, counted from the
   * start of the term and then from each call (docs/stuck-leaders.md). Past it the leader is
   * STUCK: its signal aborts with RecipeError STUCK, its session stops renewing (the lease runs
   * out on the server and another candidate takes over, with a larger token), it does not resign
   * while the callback may still run, and this elector campaigns again only once the callback has
   * settled — never, if it never settles. Reported through onError and trace. Default: none.
   */
  readonly progressDeadlineMs?: number;
  /**
   * STONITH for effects that can check neither a token nor an idempotency key
   * (docs/stuck-leaders.md): when this candidate wins and the backend knows a previous leader
   * (`term.previous`, another term than this elector's own last one), this must resolve before
   * onStartedLeading is called — kill its process, power off its machine, revoke its credentials.
   * If it throws, or `fencePreviousTimeoutMs` passes (its signal aborts), the term does not start:
   * it is resigned, RecipeError FENCE_FAILED goes to onError (and trace), and the candidate
   * campaigns again after retryIntervalMs; the previous leader stays the one to fence.
   */
  readonly fencePrevious?: (ctx: {
    readonly previous: PreviousLeader;
    readonly signal: AbortSignal;
  }) => Promise<void>;
  /** Bound on fencePrevious, in ms. Default 10 000. */
  readonly fencePreviousTimeoutMs?: number;
  /** Called when this candidate becomes leader. Must stop when `signal` aborts. */
  readonly onStartedLeading: (ctx: LeadingContext) => Promise<void> | void;
  /** Called after a term ended (the callback settled and the key was resigned); only if it led. */
  readonly onStoppedLeading?: () => void;
  /** A new term began (identity of the new leader) or there is no leader (null). */
  readonly onNewLeader?: (identity: string | null, leader: LeaderInfo | null) => void;
  /** Failures that the elector survives (a grant or campaign error, a throwing callback). */
  readonly onError?: (error: unknown) => void;
  readonly trace?: RecipeTrace;
}

// Named limits and defaults.
const ttlSecondsDefault = 15;
const retryIntervalMsDefault = 1_000;
const handOffTtlSecondsDefault = 15;
const fencePreviousTimeoutMsDefault = 10_000;
/** Bound on the write of the last-leader record, in ms. */
const recordTimeoutMs = 5_000;
/** Bound on the revoke of a term's session, in ms. */
const sessionCloseTimeoutMs = 2_000;

export class LeaderElector implements AsyncDisposable {
  readonly #backend: ElectorBackend;
  readonly #o: LeaderElectorOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #observer: ElectorObserver | undefined;
  #observing: Promise<void> | undefined;
  #term: ElectorTerm | undefined;
  /** The token of this elector's latest started term (its callback has settled once we campaign). */
  #ownToken: bigint | undefined;
  #termEnded: Promise<void> | undefined;
  /** The session of the campaign or term in progress. */
  #session: Session | undefined;
  #leader: LeaderInfo | null | undefined;

  /** On a Client: etcd's election layout (etcdElectorBackend); else the backend given. */
  constructor(backend: Client | ElectorBackend, options: LeaderElectorOptions) {
    if (options.identity.length === 0) throw new RangeError('LeaderElector: identity is empty');
    const d = options.progressDeadlineMs;
    if (d !== undefined && !(d > 0 && Number.isFinite(d))) {
      throw new RangeError('LeaderElector: progressDeadlineMs must be a finite number > 0');
    }
    const f = options.fencePreviousTimeoutMs;
    if (f !== undefined && !(f > 0 && Number.isFinite(f))) {
      throw new RangeError('LeaderElector: fencePreviousTimeoutMs must be a finite number > 0');
    }
    this.#backend =
      backend instanceof Client
        ? etcdElectorBackend(backend, options.name, {
            ...(options.trace === undefined ? {} : { trace: options.trace }),
          })
        : backend;
    this.#o = options;
  }

  /** Start campaigning and observing (idempotent). */
  start(): this {
    if (this.#loop !== undefined) return this;
    // A closed client never answers again: the elector stops with it (not an onError, which is
    // for failures the elector survives) instead of retrying for ever.
    const unlink = linkAbort(this.#backend.closingSignal, this.#stop);
    this.#observer = this.#backend.observe(this.#o.name, { signal: this.#stop.signal });
    this.#observing = this.#observe(this.#observer);
    this.#loop = this.#run().finally(unlink);
    return this;
  }

  /** True while this candidate leads and its session is valid (checked now). */
  get isLeader(): boolean {
    return this.#term?.valid() ?? false;
  }

  /** The current term, while leading. */
  get term(): ElectorTerm | undefined {
    return this.#term;
  }

  /** The current term's etcd Leadership, while leading on the etcd backend. */
  get leadership(): Leadership | undefined {
    const t = this.#term;
    return t instanceof EtcdTerm ? t.leadership : undefined;
  }

  /** The leader last observed (undefined before the first observation). */
  get leader(): LeaderInfo | null | undefined {
    return this.#leader;
  }

  /**
   * Hand leadership to `identity` (see the protocol above): write the hint, end this term (the
   * callback's signal aborts with RecipeError HANDED_OFF), resign. Resolves once this term has
   * ended. RecipeError NOT_LEADER if this candidate does not lead, UNSUPPORTED if the backend
   * has no hand-off.
   */
  async handOff(identity: string, options: CallOptions = {}): Promise<void> {
    const l = this.#term;
    if (l === undefined || !l.valid()) {
      throw new RecipeError('NOT_LEADER', `${this.#o.identity} does not lead ${this.#o.name}`);
    }
    const b = this.#backend;
    if (b.handOff === undefined) {
      throw new RecipeError('UNSUPPORTED', `${this.#o.name}: this backend has no hand-off`);
    }
    const ttl = this.#o.handOffTtlSeconds ?? handOffTtlSecondsDefault;
    try {
      await b.handOff(this.#o.name, l, identity, ttl, options);
    } catch (e) {
      if (e instanceof RecipeError && e.code === 'NOT_LEADER') {
        throw new RecipeError('NOT_LEADER', `${this.#o.identity} lost ${this.#o.name} meanwhile`);
      }
      throw e;
    }
    const ended = this.#termEnded;
    l.abort(new RecipeError('HANDED_OFF', `${this.#o.name}: handed off to ${identity}`));
    await ended;
  }

  /**
   * Stop: abort the leading callback's signal, wait for it to settle, resign, close the session.
   * Idempotent. Resolves true once all that is done. With `timeoutMs`, a callback that has not
   * settled by then (a stuck one may never settle) is left behind: its session is abandoned, so
   * nobody renews or revokes the lease and it runs out on the server — the next leader starts no
   * earlier than that, as after a crash — and stop() resolves false (for a shutdown handler that
   * must exit). The resign still happens, fenced, if the callback settles later.
   */
  async stop(options: { readonly timeoutMs?: number } = {}): Promise<boolean> {
    // Aborting #stop also ends a term in progress at once (its listener in #lead).
    this.#stop.abort(new RecipeError('STOPPED', `${this.#o.name}: elector stopped`));
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && this.#loop !== undefined) {
      if (!(timeoutMs >= 0)) throw new RangeError('LeaderElector.stop: timeoutMs must be ≥ 0');
      const loop = this.#loop.then(() => true);
      const timer = new AbortController();
      const late = sleep(timeoutMs, timer.signal).then(
        () => false,
        () => true,
      );
      const settled = await Promise.race([loop, late]);
      timer.abort();
      if (!settled) {
        this.#session?.abandon();
        await this.#observer?.close();
        await this.#observing;
        return false;
      }
    }
    await this.#loop;
    await this.#observer?.close();
    await this.#observing;
    return true;
  }

  /** Resolves once stopped. */
  async closed(): Promise<void> {
    await this.#loop;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  async #observe(observer: ElectorObserver): Promise<void> {
    let lastToken: bigint | null | undefined;
    for await (const info of observer) {
      this.#leader = info;
      const token = info === null ? null : info.token;
      if (token === lastToken) continue;
      lastToken = token;
      try {
        this.#o.onNewLeader?.(info === null ? null : info.value.toString(), info);
      } catch (e) {
        this.#o.onError?.(e);
      }
    }
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    const o = this.#o;
    while (!stop.aborted) {
      let session: Session | undefined;
      let failed = false;
      try {
        session = await this.#backend.session({
          ...o.session,
          ttlSeconds: o.ttlSeconds ?? ttlSecondsDefault,
          signal: stop,
        });
        this.#session = session;
        const value = Buffer.from(o.identity);
        const l = await this.#backend.campaign(o.name, session, value, { signal: stop });
        await this.#begin(l, session, value);
        await this.#lead(l, session);
      } catch (e) {
        if (!stop.aborted) {
          failed = true;
          o.onError?.(e);
        }
      } finally {
        this.#session = undefined;
        await session?.close({ timeoutMs: sessionCloseTimeoutMs }).catch(() => undefined);
      }
      if (failed) await sleep(o.retryIntervalMs ?? retryIntervalMsDefault, stop).catch(() => {});
    }
  }

  /**
   * Before onStartedLeading: fence the previous leader (unless it is this elector's own settled
   * term) and record this term as the last that started. On failure the term is resigned and the
   * error thrown (RecipeError FENCE_FAILED, or NOT_LEADER if the term was lost), so #run reports
   * it and campaigns again after retryIntervalMs.
   */
  async #begin(l: ElectorTerm, session: Session, value: Buffer): Promise<void> {
    const o = this.#o;
    const prev = l.previous;
    try {
      // Fence by token, not identity: a restarted process with the same identity is another
      // process. Only this elector's own previous term is known to be over: its callback settled
      // before this campaign began.
      if (prev !== null && o.fencePrevious !== undefined && prev.token !== this.#ownToken) {
        await this.#fence(l, session, prev, o.fencePrevious);
      }
      const b = this.#backend;
      if (b.recordLeader !== undefined) {
        const call = { signal: l.signal, timeoutMs: recordTimeoutMs };
        if (!(await b.recordLeader(o.name, l, value, call))) {
          throw new RecipeError('NOT_LEADER', `${o.name}: lost before the term started`);
        }
      }
    } catch (e) {
      await l.resign().catch(() => false);
      throw e;
    }
  }

  async #fence(
    l: ElectorTerm,
    session: Session,
    previous: PreviousLeader,
    hook: NonNullable<LeaderElectorOptions['fencePrevious']>,
  ): Promise<void> {
    const o = this.#o;
    const timeoutMs = o.fencePreviousTimeoutMs ?? fencePreviousTimeoutMsDefault;
    const ac = new AbortController();
    const unlinks = [linkAbort(l.signal, ac), linkAbort(this.#stop.signal, ac)];
    const cancel = session.clock.after(timeoutMs, () =>
      ac.abort(new RecipeError('FENCE_FAILED', `fencePrevious: no answer in ${timeoutMs} ms`)),
    );
    const trace = (outcome: 'fenced' | 'failed'): void =>
      o.trace?.({
        type: 'fence-previous',
        key: o.name,
        token: l.token,
        previousToken: previous.token,
        outcome,
      });
    // The wait is bounded even for a hook that ignores its signal (it then runs on unawaited).
    const aborted = new Promise<never>((_r, reject) =>
      ac.signal.addEventListener('abort', () => reject(ac.signal.reason as Error), { once: true }),
    );
    aborted.catch(() => undefined);
    try {
      await Promise.race([
        Promise.resolve().then(() => hook({ previous, signal: ac.signal })),
        aborted,
      ]);
      trace('fenced');
    } catch (e) {
      trace('failed');
      throw new RecipeError(
        'FENCE_FAILED',
        `${o.name}: fencing the previous leader (token ${previous.token}) failed; ` +
          `${o.identity} does not start: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    } finally {
      cancel();
      for (const u of unlinks) u();
      ac.abort(new RecipeError('FENCE_FAILED', 'fencePrevious: over'));
    }
  }

  /** The watchdog of one term, or undefined without progressDeadlineMs. */
  #watchdog(l: ElectorTerm, session: Session): ProgressWatchdog | undefined {
    const deadlineMs = this.#o.progressDeadlineMs;
    if (deadlineMs === undefined) return undefined;
    return new ProgressWatchdog(session.clock, deadlineMs, () => {
      const e = new RecipeError(
        'STUCK',
        `${this.#o.name}: ${this.#o.identity} made no progress within ${deadlineMs} ms; ` +
          'its session is abandoned and it campaigns again only once its callback settles',
      );
      l.abort(e);
      session.abandon();
      this.#o.trace?.({ type: 'stuck', key: this.#o.name, token: l.token, deadlineMs });
      this.#o.onError?.(e);
    });
  }

  async #lead(l: ElectorTerm, session: Session): Promise<void> {
    let endTerm!: () => void;
    this.#termEnded = new Promise((resolve) => (endTerm = resolve));
    this.#term = l;
    this.#ownToken = l.token;
    const stop = this.#stop.signal;
    const onStop = (): void => l.abort(new RecipeError('STOPPED', `${this.#o.name}: stopped`));
    stop.addEventListener('abort', onStop, { once: true });
    if (stop.aborted) onStop();
    const watchdog = this.#watchdog(l, session);
    try {
      try {
        await this.#o.onStartedLeading({
          signal: l.signal,
          token: l.token,
          term: l,
          leadership: l instanceof EtcdTerm ? l.leadership : undefined,
          progress: () => watchdog?.progress(),
        });
      } catch (e) {
        if (!l.signal.aborted) this.#o.onError?.(e);
      } finally {
        // A settled callback is not stuck, whatever it did before (and has nothing to report).
        watchdog?.stop();
      }
      // A callback that returned early keeps leadership until the signal aborts (client-go).
      if (!l.signal.aborted) {
        await new Promise<void>((resolve) =>
          l.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
      }
    } finally {
      stop.removeEventListener('abort', onStop);
      // Release after the callback has settled: never while its work may still be running.
      await l.resign().catch(() => false);
      this.#term = undefined;
      try {
        this.#o.onStoppedLeading?.();
      } catch (e) {
        this.#o.onError?.(e);
      }
      endTerm();
    }
  }
}
