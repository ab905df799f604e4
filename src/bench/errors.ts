// The bench's typed errors, in a module of their own so that the CLI can name them without
// loading the bench (and the etcd3 client) for every other subcommand.

/** A prerequisite is missing (etcd not installed) or a cluster could not be started. */
export class BenchSetupError extends Error {
  override readonly name = 'BenchSetupError';
  readonly code = 'BENCH_SETUP';
}

/** Bad options (an unknown workload name). */
export class BenchUsageError extends Error {
  override readonly name = 'BenchUsageError';
  readonly code = 'BENCH_USAGE';
}
