// PgElection: campaign, proclaim, resign, leader and observe (src/client/election.ts's shape) on
// one election row of the lease table. A campaign is a take of the row (take.ts) that also stores
// the candidate's value. The row also names the last leader that STARTED (last_value and
// last_token, written by `record()`, fenced on the term): the take returns them in the same
// statement as the new term's `previous`. LeaderElector records a term only after its
// fencePrevious hook succeeded, so a winner that never started is never "previous". A
// new term and a resignation notify observers; a leader whose session dies notifies nobody, so
// observers also re-read at the leader's expiry and at least every poll interval.
import type { CallOptions } from '../client/call-options.js';
import type { LeaderInfo } from '../client/election.js';
import type { ElectorObserver, ElectorTerm, PreviousLeader } from '../client/elector-backend.js';
import { RecipeError } from '../client/recipe-errors.js';
import { StateBuffer, dropOldest } from '../client/state-buffer.js';
import type { Session } from '../client/session.js';
import { withCall } from './call.js';
import type { PgContext } from './context.js';
import { PgHold } from './lock.js';
import { electionRow } from './sql.js';
import { claim, take } from './take.js';

/** States an observer buffers for a consumer that does not keep up; the oldest are dropped. */
const observedStatesBufferedMax = 64;

/** One term of leadership. */
export class PgLeadership extends PgHold implements ElectorTerm {
  readonly previous: PreviousLeader | null;
  #value: Buffer;

  constructor(
    ctx: PgContext,
    name: string,
    session: Session,
    token: bigint,
    value: Buffer,
    previous: PreviousLeader | null,
    unclaim: () => void,
  ) {
    super(ctx, name, electionRow(name), session, token, unclaim);
    this.#value = value;
    this.previous = previous;
  }

  /** The latest proclaimed value. */
  get value(): Buffer {
    return this.#value;
  }

  /** Set the value while still leading (fenced on the token); RecipeError NOT_LEADER if not. */
  async proclaim(value: Buffer, options: CallOptions = {}): Promise<void> {
    this.assertHeld();
    const db = this.ctx.db;
    const r = await withCall(`pg proclaim ${this.row}`, options, () =>
      db.run(db.sql.proclaim, [
        this.row,
        this.session.leaseId.toString(),
        this.token.toString(),
        value,
        db.sql.channel,
      ]),
    );
    if ((r.rowCount ?? 0) === 0) {
      throw new RecipeError('NOT_LEADER', `${this.row}: token ${this.token} no longer leads`);
    }
    this.#value = value;
  }

  /**
   * Record this term as the last leader that started (fenced on the term: false if it no longer
   * holds): the next term's `previous`. LeaderElector calls it before onStartedLeading.
   */
  async record(value: Buffer, options: CallOptions = {}): Promise<boolean> {
    const db = this.ctx.db;
    const r = await withCall(`pg record ${this.row}`, options, () =>
      db.run(db.sql.recordLeader, [
        this.row,
        this.session.leaseId.toString(),
        this.token.toString(),
        value,
      ]),
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** Resign (fenced): true if this call ended the term, false if it was already lost. */
  resign(options: CallOptions = {}): Promise<boolean> {
    return this.end(new RecipeError('RESIGNED', `${this.row}: resigned`), options);
  }
}

export class PgElection {
  readonly name: string;
  readonly #ctx: PgContext;

  constructor(ctx: PgContext, name: string) {
    this.#ctx = ctx;
    this.name = name;
  }

  /** Wait until `value` leads on `session`; the term's signal aborts when it must stop. */
  async campaign(
    session: Session,
    value: Buffer,
    options: CallOptions = {},
  ): Promise<PgLeadership> {
    const row = electionRow(this.name);
    const unclaim = claim(session, row);
    try {
      const taken = await take(
        {
          db: this.#ctx.db,
          listener: this.#ctx.listener,
          row,
          session,
          value,
          pollIntervalMs: this.#ctx.pollIntervalMs,
          closing: this.#ctx.closing,
          once: false,
        },
        options,
      );
      if (taken === undefined) throw new Error('unreachable: a waiting take returned nothing');
      return new PgLeadership(
        this.#ctx,
        this.name,
        session,
        taken.token,
        value,
        taken.previous,
        unclaim,
      );
    } catch (e) {
      unclaim();
      throw e;
    }
  }

  /** The leader now (its session unexpired by the database clock), or null. */
  async leader(options: CallOptions = {}): Promise<LeaderInfo | null> {
    const db = this.#ctx.db;
    const row = electionRow(this.name);
    const r = await withCall(`pg leader ${row}`, options, () => db.run(db.sql.holder, [row]));
    const x = r.rows[0];
    if (x === undefined || x.session_id === null) return null;
    return {
      key: row,
      token: BigInt(x.token as string),
      leaseId: BigInt(x.session_id as string),
      value: (x.value as Buffer | null) ?? Buffer.alloc(0),
      modRevision: BigInt(x.revision as string),
    };
  }

  /** Observe the leader until the signal aborts or close(): null is "no leader". */
  observe(options: { readonly signal?: AbortSignal } = {}): PgLeaderObserver {
    return new PgLeaderObserver(this.#ctx, this, options.signal);
  }
}

const sameLeader = (a: LeaderInfo | null, b: LeaderInfo | null): boolean =>
  a === null || b === null ? a === b : a.token === b.token && a.modRevision === b.modRevision;

export class PgLeaderObserver implements ElectorObserver {
  readonly #stop = new AbortController();
  readonly #states = new StateBuffer<LeaderInfo | null>({
    maxBuffered: observedStatesBufferedMax,
    overflow: dropOldest,
  });
  #current: LeaderInfo | null | undefined;
  readonly #done: Promise<void>;

  constructor(ctx: PgContext, election: PgElection, signal: AbortSignal | undefined) {
    const end = (): void => this.#stop.abort();
    if (signal?.aborted === true) end();
    signal?.addEventListener('abort', end, { once: true });
    ctx.closing.addEventListener('abort', end, { once: true });
    this.#done = this.#run(ctx, election).finally(() => {
      signal?.removeEventListener('abort', end);
      ctx.closing.removeEventListener('abort', end);
      this.#states.end();
    });
  }

  /** The leader last reported (undefined before the first read). */
  get current(): LeaderInfo | null | undefined {
    return this.#current;
  }

  async #run(ctx: PgContext, election: PgElection): Promise<void> {
    const row = electionRow(election.name);
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      void ctx.listener.ensure();
      const wake = ctx.listener.arm(row);
      try {
        let waitMs = ctx.pollIntervalMs;
        try {
          const now = await election.leader({ signal });
          if (this.#current === undefined || !sameLeader(this.#current, now)) {
            this.#current = now;
            this.#states.push(now);
          }
          if (now !== null) {
            const e = await withCall(`pg holder of ${row}`, { signal }, () =>
              ctx.db.run(ctx.db.sql.holderExpiry, [row]),
            );
            waitMs = Math.min(waitMs, Number(e.rows[0]?.ms ?? 0) + 5);
          }
        } catch {
          if (signal.aborted) return;
        }
        await wake.wait(waitMs, signal).catch(() => undefined);
      } finally {
        wake.cancel();
      }
    }
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  [Symbol.asyncIterator](): AsyncIterator<LeaderInfo | null> {
    return this.#states.iterator(() => this.close());
  }
}
