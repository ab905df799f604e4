// The launcher's one error type. Callers tell failures apart by `code`: the CLI prints any of
// them as a one-line refusal, the bench turns them into its setup error, a test just fails.

export type LaunchErrorCode =
  /** etcd is not installed where the launcher looks. */
  | 'NO_ETCD'
  /** A port asked for is taken by another process. */
  | 'PORT_IN_USE'
  /** A cluster recorded in the data directory is still running. */
  | 'ALREADY_RUNNING'
  /** The data directory holds members made with(out) TLS, and this start asks otherwise. */
  | 'TLS_MISMATCH'
  /** A member could not be spawned, or exited while it was expected to run. */
  | 'MEMBER_EXITED'
  /** The cluster did not become ready in time. */
  | 'NOT_READY';

export class LaunchError extends Error {
  override readonly name = 'LaunchError';
  readonly code: LaunchErrorCode;

  constructor(code: LaunchErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
