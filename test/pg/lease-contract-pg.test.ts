// The backend-neutral lock contract (test/client/lease-contract.ts) on a throwaway PostgreSQL
// server: each contender has its own pool (its own connections), backend object and session.
import { connectPg, type PgBackend } from '../../src/pg/index.js';
import { startPostgres, type PostgresServer } from '../../src/pg/throwaway-server.js';
import { leaseContract } from '../client/lease-contract.js';

let server: PostgresServer | undefined;
const table = 'contract_leases';

leaseContract({
  label: 'postgres',
  start: async () => {
    server = await startPostgres({ database: 'lease_contract' });
  },
  stop: async () => {
    await server?.stop();
  },
  contender: async (ttlSeconds) => {
    const pg: PgBackend = await connectPg({
      connectionString: server?.url ?? '',
      poolSize: 3,
      table,
    });
    const session = await pg.session({ ttlSeconds });
    return {
      session,
      acquire: (name, options) => pg.lock(session, name).acquire(options),
      // The row's token while its holder's session is unexpired by the database clock.
      holderToken: async (name) => {
        const r = await pg.pool.query<{ token: string }>(
          `SELECT l.token FROM ${table} l JOIN ${table} h ON h.name = 'session/' || l.session_id
           WHERE l.name = $1 AND h.expires_at > clock_timestamp()`,
          [`lock/${name}`],
        );
        const token = r.rows[0]?.token;
        return token === undefined ? null : BigInt(token);
      },
      close: async () => {
        await session.close().catch(() => undefined);
        await pg.close();
      },
    };
  },
  childArgs: () => ['pg', `${server?.url ?? ''}#${table}`],
});
