// A type test of the usage example in src/fence/index.ts: it must compile against the real SDK
// Lock and the real pg Pool (the runtime paths are covered by the adapter suites).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { Lock, type Client } from '../../src/client/index.js';
import { fencedTransaction } from '../../src/fence/index.js';

async function example(client: Client, pool: pg.Pool, id: number): Promise<void> {
  const session = await client.session();
  await new Lock(client, session, 'jobs').run(({ token }) =>
    fencedTransaction(pool, { scope: 'jobs', token }, (db) =>
      db.query('UPDATE jobs SET state = $1 WHERE id = $2', ['done', id]),
    ),
  );
}

test('the index.ts usage example type-checks against the SDK and pg', () => {
  assert.equal(typeof example, 'function');
});
