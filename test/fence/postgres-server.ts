// The throwaway PostgreSQL server of the fence and pg tests lives in src/pg (the bench starts one
// too); re-exported here for the tests that import it from this path.
export {
  postgresBinDir,
  startPostgres,
  type PostgresServer,
} from '../../src/pg/throwaway-server.js';
