// The one acquisition loop of Lock.acquire and Election.campaign: queue up, wait for the turn,
// confirm the head by one Txn, and claim it only while the session is valid at that moment (so a
// campaign or acquire never returns after its session expired, etcd #19597). Lock adds its
// lock-delay and Election its hand-off hint through the hooks; everything else is the same.
import type { CallOptions } from './call-options.js';
import type { PredecessorGone } from './recipe-keys.js';
import { RecipeError } from './recipe-errors.js';
import { KeyGuard } from './recipe-guard.js';
import {
  cleanup,
  cleanupUnknown,
  enqueue,
  fencedDelete,
  verifyHead,
  waitTurn,
  type Entry,
  type QueueContext,
} from './recipe-queue.js';
import { WaitScope, expirySignal, register, unregister, untilValid } from './recipe-wait.js';

/** What the hooks may ask for at their point of the loop. */
export type Next = 'go-on' | 'wait-again';

export interface Contention<H> {
  /** For the timeout's message: `lock <name>`, `campaign <name>`. */
  readonly label: string;
  /** For the lost key's message: `waiting`, `campaigning`. */
  readonly while: string;
  readonly value: Buffer;
  /** Take the head only if it is free now (tryAcquire): no wait, no hooks but grant. */
  readonly once?: boolean;
  /** The key was already queued by this lease with `existing` (a campaign proclaims its value). */
  readonly found?: (entry: Entry, existing: Buffer, signal: AbortSignal) => Promise<void>;
  /**
   * After each wait, before the head check (the hand-off hint). `step-back` re-queues at the back
   * of the queue (the hand-off's yield); the hook traces why.
   */
  readonly waited?: (entry: Entry, signal: AbortSignal) => Promise<Next | 'step-back'>;
  /**
   * Once the head check found this entry at the head, with the latest deletion that moved it up
   * since the last call (lock-delay counts from it); not called while there is none.
   */
  readonly atHead?: (entry: Entry, gone: PredecessorGone, signal: AbortSignal) => Promise<Next>;
  /**
   * With the session valid, right before the grant: work that must come first (the successor
   * clears the hand-off hint), after which the loop checks everything again; undefined for none,
   * so that no await stands between the last checks (head, session valid) and the grant.
   */
  readonly claiming?: () => Promise<void> | undefined;
  readonly grant: (entry: Entry, guard: KeyGuard) => H;
}

/**
 * Contend for `ctx.name` until granted, or (with `once`) undefined when not free now. Without
 * `timeoutMs` it waits until granted, the signal aborts, the own key is deleted (RecipeError
 * KEY_DELETED) or the session expires (SessionExpiredError). On any failure the own key is removed
 * (fenced).
 */
export async function contend<H>(
  ctx: QueueContext,
  options: CallOptions,
  c: Contention<H>,
): Promise<H | undefined> {
  const { session } = ctx;
  register(session, ctx.name);
  const scope = new WaitScope(options, c.label);
  const expiry = expirySignal(session);
  scope.link(expiry.signal);
  let entry: Entry | undefined;
  let guard: KeyGuard | undefined;
  /** The latest deletion that let this waiter move up (for atHead: lock-delay). */
  let lastGone: PredecessorGone | undefined;
  try {
    session.assertValid();
    const queued = await enqueue(ctx, c.value, scope.signal);
    entry = queued.entry;
    const existing = queued.existingValue;
    if (existing !== undefined && c.found !== undefined) {
      await c.found(entry, existing, scope.signal);
    }
    guard = new KeyGuard(ctx, entry);
    scope.link(guard.signal);
    for (;;) {
      if (c.once === true) {
        if ((await verifyHead(ctx, entry, scope.signal)) !== 'head' || !session.valid()) {
          await guard.close();
          await cleanup(ctx, entry);
          unregister(session, ctx.name);
          return undefined;
        }
      } else {
        const gone = await waitTurn(ctx, entry, scope.signal);
        if (gone !== undefined) lastGone = gone;
        const next = c.waited === undefined ? 'go-on' : await c.waited(entry, scope.signal);
        if (next === 'wait-again') continue;
        if (next === 'step-back') {
          await guard.close();
          await fencedDelete(ctx, entry, [], { signal: scope.signal });
          entry = undefined; // until the new key is known (cleanupUnknown covers the gap)
          entry = (await enqueue(ctx, c.value, scope.signal)).entry;
          guard = new KeyGuard(ctx, entry);
          scope.link(guard.signal);
          continue;
        }
        const head = await verifyHead(ctx, entry, scope.signal);
        if (head === 'not-head') continue;
        if (head === 'lost') {
          throw new RecipeError('KEY_DELETED', `${entry.key}: own key gone while ${c.while}`);
        }
        if (c.atHead !== undefined && lastGone !== undefined) {
          const since = lastGone;
          lastGone = undefined;
          if ((await c.atHead(entry, since, scope.signal)) === 'wait-again') continue;
        }
      }
      // The server says we hold it; claim it only while the session is valid at this moment.
      if (!session.valid()) {
        await untilValid(session, scope.signal);
        continue; // re-verify: the key may have gone while the session was in jeopardy
      }
      const first = c.claiming?.();
      if (first !== undefined) {
        await first;
        continue;
      }
      ctx.trace?.({ type: 'granted', key: entry.key, token: entry.token });
      const held = c.grant(entry, guard);
      guard = undefined;
      return held;
    }
  } catch (e) {
    await guard?.close();
    if (entry !== undefined) await cleanup(ctx, entry);
    else await cleanupUnknown(ctx);
    unregister(session, ctx.name);
    throw scope.signal.aborted ? scope.signal.reason : e;
  } finally {
    scope.dispose();
    expiry.dispose();
  }
}
