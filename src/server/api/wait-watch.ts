// A watch on the node's own applied state, for server-side waits (Lock, Campaign, Observe): a
// watch hub on the machine (watch-hub.ts) plus a wake-up when the machine feeds it. The hub is
// pure and has no notification of its own; the gRPC Watch stream drains it on its own schedule.
// A waiter has nothing else to do, so it is woken the moment an applied revision (or a snapshot
// restore) reaches its hub, and then drains the hub for what it asked.
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { WatchCreateRequest, WatchHub, WatchResponse } from '../../core/state/watch-hub.js';
import { assert } from '../../core/base/assert.js';
import { abortError } from './lock-session.js';

/** One key or range to watch; it starts at the revision after the one the watch opened at. */
export type WatchSpec = Omit<WatchCreateRequest, 'startRevision' | 'watchId'>;

export class MachineWatch {
  private readonly hub: WatchHub;
  private wake: (() => void) | null = null;
  private closed = false;

  /**
   * Open watches on every spec from `machine.revision + 1`. Call it in the same synchronous
   * stretch as the read the wait depends on: nothing can be applied in between, so no event
   * after that read is missed and none before it is seen (the recipes' "watch from the Get's
   * header revision": `waitDeletes` in etcd client/v3/concurrency/key.go). The watch IDs are the
   * specs' indexes.
   */
  static open(machine: EtcdMachine, specs: readonly WatchSpec[]): MachineWatch {
    return new MachineWatch(machine, specs);
  }

  private constructor(
    private readonly machine: EtcdMachine,
    specs: readonly WatchSpec[],
  ) {
    this.hub = machine.openWatchHub();
    const start = machine.revision + 1;
    specs.forEach((spec, index) => {
      const id = this.hub.create({ ...spec, startRevision: start });
      assert(id === index, () => `wait: watch ${index} got ID ${id}`);
    });
    this.hub.drain(); // the `created` responses
    // The machine feeds the hub inside apply; the hub's change callback only resolves a
    // promise, so apply stays synchronous and the waiter wakes at once, without a timer.
    this.hub.onChange = () => this.notify();
  }

  /**
   * The next responses that carry events or cancel a watcher (compaction), oldest first;
   * waits until there are some. Rejects with the abort error when `signal` aborts.
   */
  async next(signal: AbortSignal): Promise<WatchResponse[]> {
    for (;;) {
      assert(!this.closed, 'wait: next() on a closed watch');
      const ready = this.hub.drain().filter((r) => r.events.length > 0 || r.canceled);
      if (ready.length > 0) return ready;
      await this.changed(signal);
    }
  }

  /** Stop feeding the hub; idempotent. Call it once no next() is pending (in a `finally`). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wake = null;
    this.machine.closeWatchHub(this.hub);
  }

  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError(signal));
        return;
      }
      const onAbort = (): void => {
        this.wake = null;
        reject(abortError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
