// A type test of the usage example in src/fence/index.ts: `tsc` (which builds test/ with the rest)
// fails if it no longer compiles against the real SDK Lock and the real pg Pool. It is not run:
// the runtime paths are covered by the adapter suites.
import type pg from 'pg';
import { Lock, type Client } from '../../src/client/index.js';
import { fencedTransaction } from '../../src/fence/index.js';

export async function example(client: Client, pool: pg.Pool, id: number): Promise<void> {
  const session = await client.session();
  await new Lock(client, session, 'jobs').run(({ token }) =>
    fencedTransaction(pool, { scope: 'jobs', token }, (db) =>
      db.query('UPDATE jobs SET state = $1 WHERE id = $2', ['done', id]),
    ),
  );
}
