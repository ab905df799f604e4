// The member's expected failures as thrown errors: an etcd error (code and the exact message
// clients match on, core/state/etcd-errors.ts) with a stack. The API edge reads any Error that
// carries an etcd code and message as the status to send (server/api/status.ts, statusOf).
import type { EtcdError, GrpcCode } from '../../core/state/etcd-errors.js';
import { isEtcdError } from '../../core/state/etcd-errors.js';

export class RequestError extends Error {
  readonly code: GrpcCode;

  constructor(e: EtcdError, options?: ErrorOptions) {
    super(e.message, options);
    this.name = 'RequestError';
    this.code = e.code;
  }

  /** The etcd error as plain data (for a forwarded answer). */
  get error(): EtcdError {
    return { code: this.code, message: this.message };
  }
}

/** The etcd error a failure stands for, or null when it is not one (a bug). */
export function etcdErrorOf(e: unknown): EtcdError | null {
  if (e instanceof RequestError) return e.error;
  return isEtcdError(e) ? { code: e.code, message: e.message } : null;
}
