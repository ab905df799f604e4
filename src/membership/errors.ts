// Typed errors of the membership runtime, with stable codes.

export type MembershipErrorCode =
  'BAD_CONFIG' | 'BIND_FAILED' | 'CLOSED' | 'ABORTED' | 'TIMEOUT' | 'BAD_PACKET';

export class MembershipError extends Error {
  override readonly name = 'MembershipError';
  constructor(
    readonly code: MembershipErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
