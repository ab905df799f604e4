// The idempotency-store contract: every store runs `once` with the same guarantees.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  IdempotencyInDoubtError,
  IdempotencyInProgressError,
  once,
  type IdempotencyStore,
} from '../../src/fence/index.js';

export function idempotencyContract(
  name: string,
  factory: () => Promise<{ store: IdempotencyStore; close: () => Promise<void> }>,
): void {
  describe(`idempotency contract: ${name}`, () => {
    let store: IdempotencyStore;
    let close: () => Promise<void>;
    let n = 0;
    const fresh = (label: string): string => `${label}-${++n}`;

    before(async () => {
      ({ store, close } = await factory());
    });
    after(async () => {
      await close();
    });

    test('runs the effect once; a repeat gets the recorded result', async () => {
      const key = fresh('once');
      let runs = 0;
      const effect = (): { sent: number } => ({ sent: ++runs });
      assert.deepEqual(await once(store, key, effect), { ran: true, value: { sent: 1 } });
      assert.deepEqual(await once(store, key, effect), { ran: false, value: { sent: 1 } });
      assert.equal(runs, 1);
    });

    test('concurrent callers with one key run the effect at most once', async () => {
      const key = fresh('concurrent');
      let runs = 0;
      let releaseEffect!: () => void;
      const gate = new Promise<void>((r) => (releaseEffect = r));
      const callers = Array.from({ length: 8 }, () =>
        once(store, key, async () => {
          runs++;
          await gate;
          return 'done';
        }).then(
          (r) => (r.ran ? 'ran' : 'done-before'),
          (e: unknown) => {
            assert.ok(e instanceof IdempotencyInProgressError, String(e));
            return 'in-progress';
          },
        ),
      );
      // Let every caller reach the store before the one effect finishes.
      await new Promise((r) => setImmediate(r));
      const settled = Promise.all(callers);
      releaseEffect();
      const outcomes = await settled;
      assert.equal(runs, 1);
      assert.equal(outcomes.filter((o) => o === 'ran').length, 1);
      assert.deepEqual(await once(store, key, () => 'again'), { ran: false, value: 'done' });
    });

    test('a failed effect releases the key, so a retry runs it', async () => {
      const key = fresh('retry');
      await assert.rejects(
        once(store, key, () => {
          throw new Error('smtp down');
        }),
        /smtp down/,
      );
      assert.deepEqual(await once(store, key, () => 'sent'), { ran: true, value: 'sent' });
    });

    test('at-most-once: a claimant that died leaves the key in progress, then in doubt', async () => {
      const key = fresh('crashed');
      assert.deepEqual(await store.claim(key, 'dead-process', {}), { state: 'claimed' });
      let runs = 0;
      await assert.rejects(
        once(store, key, () => ++runs, { inDoubtAfterMs: 3_600_000 }),
        IdempotencyInProgressError,
      );
      await assert.rejects(
        once(store, key, () => ++runs, { inDoubtAfterMs: 0 }),
        (e: unknown) => e instanceof IdempotencyInDoubtError && e.code === 'IDEMPOTENCY_IN_DOUBT',
      );
      assert.equal(runs, 0);
      // An operator checked the target and found the effect had happened.
      await store.complete(key, 'found-sent');
      assert.deepEqual(await once(store, key, () => ++runs), { ran: false, value: 'found-sent' });
    });

    test('at-least-once: an abandoned claim is taken over and the effect runs', async () => {
      const key = fresh('takeover');
      await store.claim(key, 'dead-process', {});
      const r = await once(store, key, () => 'ran-again', {
        mode: 'at-least-once',
        inDoubtAfterMs: 0,
      });
      assert.deepEqual(r, { ran: true, value: 'ran-again' });
    });

    test('the dead claimant cannot release a claim taken over from it; forget clears a key', async () => {
      const key = fresh('forget');
      await store.claim(key, 'old', {});
      assert.deepEqual(await store.claim(key, 'new', { takeOverAfterMs: 0 }), { state: 'claimed' });
      await store.release(key, 'old');
      assert.equal((await store.claim(key, 'third', {})).state, 'pending');
      await store.forget(key);
      assert.deepEqual(await once(store, key, () => 1), { ran: true, value: 1 });
    });
  });
}
