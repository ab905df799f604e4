// The chaos harness's errors. Callers tell them apart by `code`: the CLI answers a usage error
// with exit code 2 and a harness that could not run (no root, no unshare, no iptables) with 3, so
// that neither reads as an anomaly (exit code 1) or a clean pass (0).

export type ChaosErrorCode =
  /** A flag's value was refused (unknown workload or fault, bad number). */
  | 'USAGE'
  /** The harness itself could not run: no namespace, no iptables, members never ready. */
  | 'SETUP';

export class ChaosError extends Error {
  override readonly name = 'ChaosError';
  readonly code: ChaosErrorCode;

  constructor(code: ChaosErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
