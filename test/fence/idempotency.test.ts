// The in-memory idempotency store against the store contract (PostgreSQL's is in postgres.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryIdempotencyStore, once } from '../../src/fence/index.js';
import { idempotencyContract } from './idempotency-suite.js';

idempotencyContract('memory', () =>
  Promise.resolve({ store: new MemoryIdempotencyStore(), close: () => Promise.resolve() }),
);

test('memory store measures claim age with the injected clock', async () => {
  let now = 1_000;
  const store = new MemoryIdempotencyStore({ nowMs: () => now });
  await store.claim('k', 'a', {});
  now += 500;
  assert.deepEqual(await store.claim('k', 'b', {}), { state: 'pending', claimedAgoMs: 500 });
  assert.deepEqual(await store.claim('k', 'b', { takeOverAfterMs: 501 }), {
    state: 'pending',
    claimedAgoMs: 500,
  });
  assert.deepEqual(await store.claim('k', 'b', { takeOverAfterMs: 500 }), { state: 'claimed' });
  await assert.rejects(
    once(store, '', () => 1),
    RangeError,
  );
});
