// The SDK connection without a server: many calls in flight at once on one client must not make
// Node warn of a listener leak (each call listens for the client's close while it runs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Connection } from '../../src/client/connection.js';

test('64 calls in flight on one connection raise no MaxListenersExceededWarning', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`);
  };
  process.on('warning', onWarning);
  try {
    const c = new Connection({
      endpoints: ['http://127.0.0.1:1'],
      defaultTimeoutMs: 1_000,
      attemptTimeoutMs: 500,
    });
    const scopes = Array.from({ length: 64 }, () => c.scope({}, 'put'));
    // Warnings are emitted on a later tick.
    await new Promise((r) => setImmediate(r));
    for (const s of scopes) s.dispose();
    c.close();
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings, []);
});
