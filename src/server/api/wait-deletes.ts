// The queue wait of the Lock and Election services: the one wait loop (src/core/queue/turn.ts,
// etcd's `waitDeletes` with the own key read and watched too) driven against this member's
// applied state. Each read is linearizable (a read barrier, then the machine's state at one
// revision), and each watch is opened in the same synchronous stretch as the read it follows, so
// nothing applied in between is missed.
import { assert } from '../../core/base/assert.js';
import { awaitTurn } from '../../core/queue/turn.js';
import type { ResponseHeader } from '../../core/state/kv-types.js';
import type { KvBackend } from '../../replica/member/backend.js';
import { rangeNow } from './lock-session.js';
import { queueKv, toRangeRequest, type ServerQueueKv } from './queue-requests.js';
import { MachineWatch } from './wait-watch.js';

export type TurnOutcome =
  /** At `header.revision` the own key was alive with its create revision and nothing older. */
  | { readonly type: 'turn'; readonly header: ResponseHeader }
  /** The own key is gone, or was deleted and created again (a different incarnation). */
  | { readonly type: 'lost' };

/**
 * Wait until `ownKey`, created at `myRev`, is the oldest key under `prefix`. Rejects with the
 * abort error when `signal` aborts; every watch is closed on every path.
 */
export async function waitForTurn(
  backend: KvBackend,
  prefix: Uint8Array,
  ownKey: Uint8Array,
  myRev: number,
  signal: AbortSignal,
): Promise<TurnOutcome> {
  const turn = awaitTurn<ServerQueueKv>({ key: ownKey, token: BigInt(myRev) }, prefix, 'read');
  /** The header of the last read: the turn's, once nothing older is left. */
  let header: ResponseHeader | undefined;
  for (let step = turn.next(); ;) {
    if (step.done) {
      if (step.value.type === 'lost') return { type: 'lost' };
      assert(header !== undefined, 'wait: a turn without a read');
      return { type: 'turn', header };
    }
    const req = step.value;
    if (req.type === 'read') {
      await backend.readBarrier(signal);
      const own = req.own === undefined ? undefined : rangeNow(backend, toRangeRequest(req.own));
      const older = rangeNow(backend, toRangeRequest(req.predecessor));
      header = older.header;
      step = turn.next({
        type: 'read',
        revision: BigInt(older.header.revision),
        own: queueKv(own?.kvs[0]),
        predecessor: queueKv(older.kvs[0]),
      });
      continue;
    }
    // Still the read's synchronous stretch: the watch starts right after the revision it saw.
    assert(
      req.fromRevision === BigInt(backend.machine.revision + 1),
      'wait: the watch must start right after the read',
    );
    const watch = MachineWatch.open(
      backend.machine,
      req.keys.map((key) => ({ key, filters: ['NOPUT'] })),
    );
    try {
      // Any answer (a deletion of either key, or a watcher cancelled by compaction) leads to
      // the same next step: read again. That read tells which it was.
      await watch.next(signal);
    } finally {
      watch.close();
    }
    step = turn.next({ type: 'woken' });
  }
}
