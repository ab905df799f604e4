// The in-memory fence: the contract in its simplest form, for tests, examples and resources that
// live inside one process (a cache, an in-process queue). Marks are lost when the process exits,
// so it protects nothing across restarts.
import {
  assertAdmitted,
  checkScope,
  checkToken,
  type Fence,
  type FenceCallOptions,
} from './contract.js';
import { KeyedMutex } from './mutex.js';

/** What a memory-fenced effect is told: the scope and token it runs under. */
export interface MemoryFenceTx {
  readonly scope: string;
  readonly token: bigint;
}

export class MemoryFence implements Fence<MemoryFenceTx> {
  readonly #marks = new Map<string, bigint>();
  readonly #mutex = new KeyedMutex();

  async write<T>(
    scope: string,
    token: bigint,
    effect: (tx: MemoryFenceTx) => Promise<T> | T,
    options: FenceCallOptions = {},
  ): Promise<T> {
    checkScope(scope);
    checkToken(token);
    // The mutex makes check-then-effect one step per scope even when the effect awaits.
    return this.#mutex.run(
      scope,
      async () => {
        const mark = this.#marks.get(scope);
        assertAdmitted(scope, token, mark);
        // Raise the mark before the effect, not after: an effect that fails half-way may already
        // have changed something, and from then on no lower token may act. The writer itself can
        // still retry, since an equal token is admitted.
        this.#marks.set(scope, token);
        return await effect({ scope, token });
      },
      options.signal,
    );
  }

  current(scope: string): Promise<bigint | undefined> {
    checkScope(scope);
    return Promise.resolve(this.#marks.get(scope));
  }
}
