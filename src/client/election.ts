// Election: campaign, proclaim, resign and a truthful observe on etcd's election layout
// (`name/<lease hex>`, value = the candidate's value), interoperable with Go's
// concurrency.Election, `etcdctl elect` and the v3election service (etcd's
// client/v3/concurrency/election.go, which server/etcdserver/api/v3election runs).
//
// Fixes over etcd's recipe (etcd issues cited by number):
// - A campaign never returns success after its session has expired: the own key is watched while
//   queued (the wait aborts the moment it goes, etcd #19597's "phantom leader"), one Txn confirms
//   key, token and lease before victory, and `session.valid()` is checked at the moment of
//   returning.
// - Every leadership carries `token` (the key's create revision); proclaim and resign are fenced
//   on it; `leadership.signal` aborts at session jeopardy, own-key loss or resign.
// - `observe()` reports "no leader" (null), reports a new term even with an identical value (the
//   token differs), and after a reconnect or a compaction re-reads the whole queue rather than
//   trusting a resume point (etcd #18163, #7815).
// - Hand-off hints (leader-elector.ts documents the protocol) are honoured by campaigns unless
//   `handOff: false`.
import type { CallOptions } from './call-options.js';
import { sleep } from './call-options.js';
import type { Client } from './client.js';
import { toBuffer, type Bytes, type KeyValue } from './codec.js';
import { ClientClosedError, CompactedError } from './errors.js';
import { contend, type Contention } from './recipe-contend.js';
import { RecipeError, type RecipeTrace } from './recipe-errors.js';
import type { KeyGuard } from './recipe-guard.js';
import { QueueHolder, endTimeoutMsDefault } from './recipe-holder.js';
import {
  decodeHandOffHint,
  handOffHintKey,
  leaderChanged,
  leaderOf,
  mustYield,
  queuePrefix,
} from './recipe-keys.js';
import { fencedPut, type Entry, type QueueContext } from './recipe-queue.js';
import { linkAbort } from './recipe-signal.js';
import { StateBuffer, dropOldest } from './state-buffer.js';
import type { Session } from './session.js';
import { compare, op, type Compare } from './txn.js';
import './dispose.js';

export interface ElectionOptions {
  /** Events for metrics and tests (queued, read, wake, yield, granted, lost, released). */
  readonly trace?: RecipeTrace;
  /**
   * Honour hand-off hints: a campaign that reaches the head of the queue while a hint names
   * another live candidate steps back once (re-queues) so that candidate leads. Default true.
   */
  readonly handOff?: boolean;
}

/** The leader as seen by `leader()` and `observe()`. */
export interface LeaderInfo {
  /** The leader key, `name/<lease hex>`. */
  readonly key: string;
  /** The fencing token of this term: the key's create revision. */
  readonly token: bigint;
  readonly leaseId: bigint;
  /** The latest proclaimed value. */
  readonly value: Buffer;
  /** The revision of the latest proclamation (or of the campaign). */
  readonly modRevision: bigint;
}

/** What a leader gets from `election.lead`. */
export interface LeaderContext {
  /** Aborts at session jeopardy, own-key loss or resign; `aborted` is computed when read. */
  readonly signal: AbortSignal;
  readonly token: bigint;
  readonly leadership: Leadership;
}

export interface ObserveOptions {
  /** Aborting it ends the observer (the iteration then finishes). */
  readonly signal?: AbortSignal;
}

// Named limits.
/** States an observer buffers for a consumer that does not keep up; the oldest are dropped. */
const observedStatesBufferedMax = 64;
/** Pause before an observer re-reads after a failed watch, in ms. */
const observeRetryPauseMs = 200;

function infoOf(kv: KeyValue): LeaderInfo {
  return {
    key: kv.key.toString(),
    token: kv.createRevision,
    leaseId: kv.lease,
    value: kv.value,
    modRevision: kv.modRevision,
  };
}

export class Election {
  readonly name: string;
  readonly #client: Client;
  readonly #trace: RecipeTrace | undefined;
  readonly #handOff: boolean;

  constructor(client: Client, name: string, options: ElectionOptions = {}) {
    queuePrefix(name); // validates the name
    this.name = name;
    this.#client = client;
    this.#trace = options.trace;
    this.#handOff = options.handOff ?? true;
  }

  /**
   * Become leader with `value` on `session`'s lease. Without `timeoutMs` it waits until elected,
   * the signal aborts, the own key is deleted (RecipeError KEY_DELETED) or the session expires
   * (SessionExpiredError). On failure the candidate key is removed (fenced).
   */
  async campaign(session: Session, value: Bytes, options: CallOptions = {}): Promise<Leadership> {
    const ctx: QueueContext = {
      client: this.#client,
      session,
      name: this.name,
      trace: this.#trace,
    };
    const val = toBuffer(value);
    const c: Contention<Leadership> = {
      label: `campaign ${this.name}`,
      while: 'campaigning',
      value: val,
      found: async (entry, existing, signal) => {
        if (!existing.equals(val)) await this.#put(ctx, entry, val, signal);
      },
      grant: (entry, guard) => new Leadership(ctx, entry, val, guard),
    };
    const l = await contend(ctx, options, this.#handOff ? this.#honouringHints(ctx, val, c) : c);
    return l as Leadership;
  }

  /** The hand-off hint's part of a campaign (leader-elector.ts documents the protocol). */
  #honouringHints(
    ctx: QueueContext,
    val: Buffer,
    c: Contention<Leadership>,
  ): Contention<Leadership> {
    const yieldedTo = new Set<bigint>();
    /** The mod revision of the hint naming this campaigner, seen in the current pass. */
    let hintRev: bigint | undefined;
    return {
      ...c,
      waited: async (entry, signal) => {
        hintRev = undefined;
        const h = await this.#hint(ctx, signal);
        // waitTurn returns when the key just ahead goes; only the first contender may yield.
        const mine = entry.token;
        if (h.contenders.some((kv) => kv.createRevision < mine)) return 'wait-again';
        if (mustYield(val.toString(), h.hint, h.contenders, yieldedTo) && h.hint !== undefined) {
          ctx.trace?.({ type: 'yield', key: entry.key, token: entry.token, to: h.hint.hint.to });
          yieldedTo.add(h.hint.modRevision);
          return 'step-back';
        }
        if (h.hint?.hint.to === val.toString()) hintRev = h.hint.modRevision;
        return 'go-on';
      },
      // Clear the hint, then check everything again.
      claiming: () => (hintRev === undefined ? undefined : this.#clearHint(hintRev)),
    };
  }

  /** Campaign, run `fn` as leader, and resign once it has settled. */
  async lead<T>(
    session: Session,
    value: Bytes,
    fn: (ctx: LeaderContext) => Promise<T> | T,
    options: CallOptions = {},
  ): Promise<T> {
    const l = await this.campaign(session, value, options);
    let result: T;
    try {
      result = await fn({ signal: l.signal, token: l.token, leadership: l });
    } catch (e) {
      await l.resign().catch(() => false);
      throw e;
    }
    await l.resign();
    return result;
  }

  /** The current leader (the first-created candidate), or null when there is none. */
  async leader(options: CallOptions = {}): Promise<LeaderInfo | null> {
    const r = await this.#client.kv.range(queuePrefix(this.name), {
      ...options,
      prefix: true,
      sortTarget: 'create',
      sortOrder: 'ascend',
      limit: 1,
    });
    const kv = r.kvs[0];
    return kv === undefined ? null : infoOf(kv);
  }

  /** Follow the leader: the current state first, then every change (see LeaderObserver). */
  observe(options: ObserveOptions = {}): LeaderObserver {
    return new LeaderObserver(this.#client, this.name, options);
  }

  async #put(ctx: QueueContext, entry: Entry, value: Buffer, signal: AbortSignal): Promise<void> {
    if (!(await fencedPut(ctx, entry, value, { signal })))
      throw new RecipeError('NOT_LEADER', `${entry.key}: no longer a candidate`);
  }

  async #hint(
    ctx: QueueContext,
    signal: AbortSignal,
  ): Promise<{
    hint: { hint: { to: string; fromToken: string }; modRevision: bigint } | undefined;
    contenders: readonly KeyValue[];
  }> {
    const r = await ctx.client.kv
      .txn()
      .then(op.get(handOffHintKey(this.name)), op.get(queuePrefix(this.name), { prefix: true }))
      .commit({ signal });
    const [h, c] = r.responses;
    const kv = h?.type === 'range' ? h.kvs[0] : undefined;
    const hint = kv === undefined ? undefined : decodeHandOffHint(kv.value);
    return {
      hint:
        hint === undefined || kv === undefined ? undefined : { hint, modRevision: kv.modRevision },
      contenders: c?.type === 'range' ? c.kvs : [],
    };
  }

  /** The chosen successor removes the hint it honoured (fenced on the hint's mod revision). */
  async #clearHint(modRevision: bigint): Promise<void> {
    const key = handOffHintKey(this.name);
    await this.#client.kv
      .txn()
      .if(compare.modRevision(key, '=', modRevision))
      .then(op.delete(key))
      .commit({ timeoutMs: endTimeoutMsDefault })
      .catch(() => undefined);
  }
}

/** A won election. Resign it (or `await using` it); its signal tells when it is no longer safe. */
export class Leadership extends QueueHolder {
  #value: Buffer;

  constructor(ctx: QueueContext, entry: Entry, value: Buffer, guard: KeyGuard) {
    super(ctx, entry, guard);
    this.#value = value;
  }

  get session(): Session {
    return this.ctx.session;
  }

  /** The latest value this leader proclaimed. */
  get value(): Buffer {
    return this.#value;
  }

  /** Throws unless leading with more than `minRemainingMs` of certain lease left. */
  assertLeader(minRemainingMs = 0): void {
    this.assertHolding(minRemainingMs);
  }

  /** A Txn compare that holds only while this term's key is the leader key. */
  isLeader(): Compare {
    return this.ownsKey();
  }

  /**
   * Publish a new value without re-election, fenced on the token: RecipeError NOT_LEADER if the
   * key is gone or belongs to another term.
   */
  async proclaim(value: Bytes, options: CallOptions = {}): Promise<void> {
    if (this.ending) throw new RecipeError('RESIGNED', `${this.key}: resigned`);
    const val = toBuffer(value);
    if (!(await this.putFenced(val, options)))
      throw new RecipeError('NOT_LEADER', `${this.key}: no longer leader`);
    this.#value = val;
  }

  /**
   * Give up leadership: abort the signal, then delete the key only if it is still this term's.
   * True if this call deleted it, false if it was already gone. Idempotent.
   */
  resign(options: CallOptions = {}): Promise<boolean> {
    return this.end(new RecipeError('RESIGNED', `${this.key}: resigned`), [], options);
  }

  /** Abort the signal without touching the key (for a hand-off that writes its hint first). */
  abort(reason: RecipeError): void {
    this.abortHold(reason);
  }

  protected endHold(): Promise<boolean> {
    return this.resign();
  }
}

/**
 * A truthful observer: yields the current leader (or null) first, then every change — a new
 * term (even with an identical value), a proclamation, or "no leader". It mirrors the candidate
 * keys under the prefix from one read plus a watch of the prefix; when the watch fails (compaction
 * or an unavailable cluster) it re-reads everything and reports the state it finds, so it never
 * resumes from a stale point. States are coalesced for a slow consumer (the newest is kept).
 */
export class LeaderObserver implements AsyncIterable<LeaderInfo | null>, AsyncDisposable {
  readonly #client: Client;
  readonly #name: string;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  readonly #states = new StateBuffer<LeaderInfo | null>({
    maxBuffered: observedStatesBufferedMax,
    overflow: dropOldest,
  });
  #last: LeaderInfo | null | undefined;
  #error: unknown;
  #rereads = 0;

  constructor(client: Client, name: string, options: ObserveOptions) {
    this.#client = client;
    this.#name = name;
    // Unlinked when the observer ends, so a long-lived caller signal keeps no listener.
    const unlink = options.signal === undefined ? undefined : linkAbort(options.signal, this.#stop);
    this.#done = this.#run().finally(() => {
      unlink?.();
      this.#states.end();
    });
  }

  /** The leader last reported (undefined before the first read). */
  get current(): LeaderInfo | null | undefined {
    return this.#last;
  }

  /** How many times the observer re-read the queue after a failed watch (for diagnostics). */
  get rereads(): number {
    return this.#rereads;
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    const pfx = queuePrefix(this.#name);
    while (!stop.aborted) {
      let from: bigint;
      const mirror = new Map<string, KeyValue>();
      try {
        const r = await this.#client.kv.range(pfx, { prefix: true, signal: stop });
        for (const kv of r.kvs) mirror.set(kv.key.toString('hex'), kv);
        from = r.header.revision + 1n;
      } catch (e) {
        if (stop.aborted || e instanceof ClientClosedError) return;
        this.#error = e;
        await sleep(observeRetryPauseMs, stop).catch(() => {});
        continue;
      }
      this.#report(mirror);
      const w = this.#client.watch(pfx, { prefix: true, startRevision: from, signal: stop });
      try {
        for await (const b of w) {
          for (const e of b.events) {
            if (e.type === 'put') mirror.set(e.kv.key.toString('hex'), e.kv);
            else mirror.delete(e.kv.key.toString('hex'));
          }
          this.#report(mirror);
        }
      } catch (e) {
        if (!(e instanceof CompactedError)) this.#error = e;
      } finally {
        await w.close();
      }
      if (stop.aborted) return;
      this.#rereads++;
      await sleep(observeRetryPauseMs, stop).catch(() => {});
    }
  }

  #report(mirror: ReadonlyMap<string, KeyValue>): void {
    const kv = leaderOf(mirror.values());
    const next = kv === null ? null : infoOf(kv);
    if (!leaderChanged(this.#last, next)) return;
    this.#last = next;
    this.#states.push(next);
  }

  /** The last failure seen (the observer keeps retrying; for diagnostics). */
  get lastError(): unknown {
    return this.#error;
  }

  /** Stop observing. Idempotent. */
  async close(): Promise<void> {
    this.#stop.abort(new Error('observer closed'));
    await this.#done;
  }

  /** Resolves once the observer has ended. */
  closed(): Promise<void> {
    return this.#done;
  }

  [Symbol.asyncIterator](): AsyncIterator<LeaderInfo | null> {
    return this.#states.iterator(() => this.close());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
