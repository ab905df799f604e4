// gRPC status codes (grpc/doc/statuscodes.md): fixed numbers on the wire. Kept here so that the
// server, which speaks HTTP/2 itself (grpc-server.ts), does not load the grpc-js client library
// (about 12 MiB of a member's RSS) for a table of seventeen numbers.
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatus = (typeof GrpcStatus)[keyof typeof GrpcStatus];
