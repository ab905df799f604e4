// KeyGuard: a contender's watch on its own key, from its creation on, while queued and while
// holding (the SDK's side of the "early termination" etcd's Mutex.Lock leaves as a TODO, #19597).
import { stillHeld } from '../core/queue/decisions.js';
import { sleep } from './call-options.js';
import { CompactedError } from './errors.js';
import { RecipeError } from './recipe-errors.js';
import type { Entry, QueueContext } from './recipe-queue.js';

/** Pause before re-reading after a watch failure that was not a compaction, in ms. */
export const watchRetryPauseMs = 100;

export interface KeyGuardOptions {
  /**
   * Also watch puts, and abort (KEY_REPLACED) when one attaches the key to another lease: for a
   * key that another session may overwrite in place, keeping its create revision (the registry's).
   * Lock and Election keys are named after their lease and leave it off (no put events to read
   * for every proclaim).
   */
  readonly leased?: boolean;
  /** The first revision watched; default the key's creation + 1. */
  readonly fromRevision?: bigint;
}

/**
 * Watches a contender's own key from its creation on, and aborts `signal` (KEY_DELETED) when the
 * key is deleted or re-created (a different create revision), or with `leased` (KEY_REPLACED)
 * when it is put on another lease. Compaction is handled by re-reading the key. Used while queued
 * and while holding, and by a registration.
 */
export class KeyGuard {
  readonly #controller = new AbortController();
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  readonly signal: AbortSignal = this.#controller.signal;
  readonly #options: KeyGuardOptions;

  constructor(
    readonly ctx: QueueContext,
    readonly entry: Entry,
    options: KeyGuardOptions = {},
  ) {
    this.#options = options;
    // A client closed without a release: the key can no longer be watched, so ownership can no
    // longer be confirmed. The holder must stop at once, and so must this loop (it once retried
    // for ever on a closed client and kept a test process alive for 15 minutes).
    const closing = ctx.client.closingSignal;
    const onClosing = (): void => {
      this.#lose('unobservable: the client was closed', closing.reason as Error);
      this.#stop.abort(closing.reason);
    };
    if (closing.aborted) onClosing();
    else closing.addEventListener('abort', onClosing, { once: true });
    this.#done = this.#run().finally(() => closing.removeEventListener('abort', onClosing));
  }

  async #run(): Promise<void> {
    const { client } = this.ctx;
    const { key, token, leaseId } = this.entry;
    const leased = this.#options.leased === true;
    const stop = this.#stop.signal;
    let from = this.#options.fromRevision ?? token + 1n;
    while (!stop.aborted) {
      const w = client.watch(key, { startRevision: from, noPut: !leased, signal: stop });
      try {
        for await (const b of w) {
          for (const e of b.events) {
            if (e.type === 'delete') {
              this.#lose('deleted');
              return;
            }
            if (leased && e.kv.lease !== leaseId) {
              this.#replaced(e.kv.lease);
              return;
            }
          }
        }
        if (stop.aborted) return;
      } catch (e) {
        if (stop.aborted) return;
        if (!(e instanceof CompactedError)) await sleep(watchRetryPauseMs, stop).catch(() => {});
      } finally {
        await w.close();
      }
      // Compaction (or a failed watch): the key's state now tells what we missed.
      try {
        const r = await client.kv.range(key, { signal: stop });
        const kv = r.kvs[0];
        if (!stillHeld(this.entry, kv)) {
          this.#lose(kv === undefined ? 'deleted' : 're-created');
          return;
        }
        if (leased && kv !== undefined && kv.lease !== leaseId) {
          this.#replaced(kv.lease);
          return;
        }
        from = r.header.revision + 1n;
      } catch {
        await sleep(watchRetryPauseMs, stop).catch(() => {});
      }
    }
  }

  #replaced(lease: bigint): void {
    const { key, token } = this.entry;
    const why = `put on lease ${lease.toString(16)}`;
    this.#lose(
      why,
      new RecipeError('KEY_REPLACED', `${key} (token ${token}) was ${why}: ownership lost`),
    );
  }

  /** `reason` replaces the KEY_DELETED error when the key's fate is unknown (client closed). */
  #lose(why: string, reason?: Error): void {
    if (this.#stop.signal.aborted) return; // closed by its owner (release, resign) meanwhile
    const { key, token } = this.entry;
    this.ctx.trace?.({ type: 'lost', key, token, why: `own key ${why}` });
    this.#controller.abort(
      reason ??
        new RecipeError('KEY_DELETED', `${key} (token ${token}) was ${why}: ownership lost`),
    );
  }

  /** Stop watching (idempotent). */
  async close(): Promise<void> {
    this.#stop.abort(new Error('guard closed'));
    await this.#done;
  }
}
