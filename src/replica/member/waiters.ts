// Waiting inside the member, on its injected clock: for an entry to be applied here, for a leader
// to be known, for a heartbeat to pass (a leader change or a commit usually follows), within a
// request's deadline and its caller's AbortSignal. Every wait ends one of four ways — woken,
// deadline, abort, member stopped — and removes its timer, listener and registration on each.
import type { EtcdError } from '../../core/state/etcd-errors.js';
import { ERR_CANCELED, ERR_STOPPED, ERR_TIMEOUT } from '../../core/state/etcd-errors.js';
import type { Clock } from '../io.js';
import { RequestError } from './request-error.js';

interface AppliedWaiter {
  readonly index: number;
  /** Runs in the apply step that reached `index`, with the index applied then. */
  readonly reached: ((appliedIndex: number) => void) | undefined;
  readonly resolve: () => void;
}

export class Waiters {
  private applied: AppliedWaiter[] = [];
  private readonly leader = new Set<() => void>();
  private stopped = false;

  constructor(private readonly clock: Clock) {}

  /** Runs for every applied entry: one pass over the waiters, and none while nobody waits. */
  onApplied(index: number): void {
    if (this.applied.length === 0) return;
    let ready: AppliedWaiter[] | undefined;
    let keep = 0;
    for (const w of this.applied) {
      if (w.index <= index) (ready ??= []).push(w);
      else this.applied[keep++] = w;
    }
    if (ready === undefined) return;
    this.applied.length = keep;
    for (const w of ready) {
      w.reached?.(index);
      w.resolve();
    }
  }

  /** The member learned of a leader (or lost it): wake whoever waits for one. */
  onLeaderChange(): void {
    const ws = [...this.leader];
    this.leader.clear();
    for (const w of ws) w();
  }

  /** The member stops: every wait ends now with `etcdserver: server stopped`. */
  stop(): void {
    this.stopped = true;
    const ws = this.applied;
    this.applied = [];
    for (const w of ws) w.resolve();
    this.onLeaderChange();
  }

  /**
   * Resolve once entry `index` is applied here (`appliedNow` is the applied index now).
   * `reached`, if given, runs in the same step as the apply that reached it, before any later
   * entry, with the index applied then (beyond `index` only when a snapshot jumped past it).
   */
  untilApplied(
    appliedNow: number,
    index: number,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    reached?: (appliedIndex: number) => void,
  ): Promise<void> {
    if (appliedNow >= index) return Promise.resolve();
    return this.waitFor(
      (wake) => {
        const w: AppliedWaiter = { index, reached, resolve: wake };
        this.applied.push(w);
        return () => {
          this.applied = this.applied.filter((x) => x !== w);
        };
      },
      deadlineMs,
      signal,
      ERR_TIMEOUT,
    );
  }

  /** Resolve at the next leader change; at the deadline reject with `onTimeout`. */
  untilLeaderChange(
    deadlineMs: number,
    signal: AbortSignal | undefined,
    onTimeout: EtcdError,
  ): Promise<void> {
    return this.waitFor(
      (wake) => {
        this.leader.add(wake);
        return () => this.leader.delete(wake);
      },
      deadlineMs,
      signal,
      onTimeout,
    );
  }

  /** Wait `ms` (a heartbeat: a leader change or a commit usually follows), within the deadline. */
  sleep(ms: number, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
    return this.waitFor((wake) => this.clock.after(ms, wake), deadlineMs, signal, ERR_TIMEOUT);
  }

  /**
   * Wait `ms` or until the next leader change, whichever is first, within the deadline: a request
   * refused while leadership moves (a transfer under way takes a round trip, not a heartbeat) goes
   * on as soon as the new leader is known.
   */
  sleepOrLeaderChange(
    ms: number,
    deadlineMs: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    return this.waitFor(
      (wake) => {
        this.leader.add(wake);
        const cancel = this.clock.after(ms, wake);
        return () => {
          this.leader.delete(wake);
          cancel();
        };
      },
      deadlineMs,
      signal,
      ERR_TIMEOUT,
    );
  }

  /** `p`, or ERR_TIMEOUT at the deadline, or ERR_CANCELED on abort, whichever is first. */
  withDeadline<T>(p: Promise<T>, deadlineMs: number, signal: AbortSignal | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let done = false;
      // Whichever comes first settles it and removes the other two, listener and timer alike.
      const settle = (fn: () => void): void => {
        if (done) return;
        done = true;
        cancel();
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const cancel = this.clock.after(Math.max(0, deadlineMs - this.clock.nowMs()), () =>
        settle(() => reject(new RequestError(ERR_TIMEOUT))),
      );
      const onAbort = (): void => settle(() => reject(new RequestError(ERR_CANCELED)));
      signal?.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => settle(() => resolve(v)),
        (e: unknown) => settle(() => reject(e instanceof Error ? e : new Error(String(e)))),
      );
    });
  }

  /** Resolve when `arm`'s wake fires; reject at the deadline, on abort, or if stopped. */
  private waitFor(
    arm: (wake: () => void) => () => void,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    onTimeout: EtcdError,
  ): Promise<void> {
    if (this.stopped) return Promise.reject(new RequestError(ERR_STOPPED));
    if (signal?.aborted) return Promise.reject(new RequestError(ERR_CANCELED));
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err: EtcdError | undefined): void => {
        if (done) return;
        done = true;
        disarm();
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(new RequestError(err));
        else resolve();
      };
      const onAbort = (): void => finish(ERR_CANCELED);
      const disarm = arm(() => finish(this.stopped ? ERR_STOPPED : undefined));
      const cancelTimer = this.clock.after(Math.max(0, deadlineMs - this.clock.nowMs()), () =>
        finish(onTimeout),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
