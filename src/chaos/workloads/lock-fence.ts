// The fenced resource the lock holders write to, owned by the chaos run itself (not by a member),
// so that what it accepted is known for certain: src/fence's MemoryFence, one scope per lock,
// which admits a write only if its token is at least the highest it accepted for that lock
// (contract.ts; Kleppmann, "How to do distributed locking", 2016). Every write is logged with the
// time it was judged on the run's clock; an accepted write is an effect of its hold, the only
// effects the lock checker is given. The open fence accepts everything: a test-only stand-in that
// proves the checker catches what a fence is there to stop.
import { MemoryFence, StaleTokenError } from '../../fence/index.js';

export interface FenceWrite {
  readonly lock: string;
  readonly hold: number;
  readonly client: number;
  readonly token: bigint;
  /** When the fence judged the write, on the run's clock. */
  readonly atMs: number;
  readonly accepted: boolean;
}

export type FenceKind = 'memory' | 'open';

export class LocksFence {
  readonly log: FenceWrite[] = [];
  readonly kind: FenceKind;
  readonly #fence = new MemoryFence();

  constructor(kind: FenceKind = 'memory') {
    this.kind = kind;
  }

  /** Judge one write; true if accepted. */
  async write(lock: string, hold: number, client: number, token: bigint): Promise<boolean> {
    let accepted = true;
    let atMs = performance.now();
    if (this.kind === 'memory') {
      try {
        await this.#fence.write(lock, token, () => {
          atMs = performance.now();
        });
      } catch (e) {
        if (!(e instanceof StaleTokenError)) throw e;
        atMs = performance.now();
        accepted = false;
      }
    }
    this.log.push({ lock, hold, client, token, atMs, accepted });
    return accepted;
  }
}
