// gRPC statuses of the client API. etcd's own errors (src/core/state/etcd-errors.ts) carry the
// code and the exact text clients match on (etcd api/v3rpc/rpctypes/error.go); the API edge adds
// the few codes the core never produces (Unimplemented for the methods tenure does not serve,
// Internal for bugs) and maps names to gRPC status numbers (grpc-codes.ts).
import { GrpcStatus } from './grpc-codes.js';
import type { EtcdError, GrpcCode } from '../../core/state/etcd-errors.js';
import { isEtcdError } from '../../core/state/etcd-errors.js';

export type StatusCode = GrpcCode | 'Unimplemented' | 'Internal';

/** An expected failure at the API edge: an etcd error, or one of the edge's own. */
export interface ApiStatus {
  readonly code: StatusCode;
  readonly message: string;
}

const CODES: Readonly<Record<StatusCode, GrpcStatus>> = {
  Canceled: GrpcStatus.CANCELLED,
  InvalidArgument: GrpcStatus.INVALID_ARGUMENT,
  NotFound: GrpcStatus.NOT_FOUND,
  FailedPrecondition: GrpcStatus.FAILED_PRECONDITION,
  OutOfRange: GrpcStatus.OUT_OF_RANGE,
  ResourceExhausted: GrpcStatus.RESOURCE_EXHAUSTED,
  Unavailable: GrpcStatus.UNAVAILABLE,
  DeadlineExceeded: GrpcStatus.DEADLINE_EXCEEDED,
  Unknown: GrpcStatus.UNKNOWN,
  Unimplemented: GrpcStatus.UNIMPLEMENTED,
  Internal: GrpcStatus.INTERNAL,
  PermissionDenied: GrpcStatus.PERMISSION_DENIED,
  Unauthenticated: GrpcStatus.UNAUTHENTICATED,
  DataLoss: GrpcStatus.DATA_LOSS,
};

/** A status for a call that exists on the wire but that tenure does not serve. */
export function unimplemented(method: string): ApiStatus {
  return { code: 'Unimplemented', message: `tenure: ${method} is not implemented` };
}

/** What a client sees when a handler has a bug; the cause goes to the log, not the wire. */
export const INTERNAL_ERROR: ApiStatus = Object.freeze({
  code: 'Internal',
  message: 'tenure: internal error',
});

export function isApiStatus(x: unknown): x is ApiStatus {
  return isEtcdError(x) && (x.code as string) in CODES;
}

/**
 * An expected failure thrown by API code (a typed error with a stable code at the edge). The
 * backend rejects with bare EtcdError values instead; `statusOf` reads both.
 */
export class ApiError extends Error {
  readonly code: StatusCode;

  constructor(status: ApiStatus, options?: ErrorOptions) {
    super(status.message, options);
    this.name = 'ApiError';
    this.code = status.code;
  }

  get status(): ApiStatus {
    return { code: this.code, message: this.message };
  }
}

/** The status an exception stands for, or null when it is a bug (an unexpected exception). */
export function statusOf(e: unknown): ApiStatus | null {
  if (e instanceof ApiError) return e.status;
  return isApiStatus(e) ? e : null;
}

/** The gRPC status of an etcd error: `code` is the gRPC number, `details` the exact text. */
export function grpcStatusOf(e: EtcdError | ApiStatus): {
  readonly code: GrpcStatus;
  readonly details: string;
} {
  return { code: CODES[e.code], details: e.message };
}
