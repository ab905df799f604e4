// What a simulated client makes of a failed call, by the rules tenure's SDK follows
// (src/client/connection.ts) and the contract the member keeps for its error messages:
// - a call the member never received (the connection was refused) may go anywhere else;
// - a read, or a lease renewal, that failed in any transient way may be sent again anywhere;
// - a write is never sent again once it may have arrived. It failed *definitely* only when the
//   member said so with one of the messages it uses only when nothing was or will be done
//   (no leader, not leader, leader changed, too many requests, a malformed request); every other
//   failure — a timeout of either side, a reset connection, `request timed out` and its variants,
//   `server stopped` — leaves its outcome unknown.
// The simulator checks that contract: a write answered with a definite failure must never take
// effect (it is left out of the history, so a read that sees it is not linearizable).
import { REFUSAL_MESSAGES } from '../replica/member/leader-routing.js';
import { GrpcStatus } from '../server/api/grpc-codes.js';
import type { CallFailure } from './api-channel.js';

export type WriteVerdict = 'resend' | 'definite' | 'unknown';
export type ReadVerdict = 'resend' | 'refusal';

/** gRPC codes of a refusal on the request's own merits (bad input, missing lease, ...). */
const REFUSAL_CODES: ReadonlySet<number> = new Set([
  GrpcStatus.INVALID_ARGUMENT,
  GrpcStatus.NOT_FOUND,
  GrpcStatus.OUT_OF_RANGE,
  GrpcStatus.FAILED_PRECONDITION,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.UNIMPLEMENTED,
]);

export function writeVerdict(f: CallFailure): WriteVerdict {
  if (f.kind === 'refused') return 'resend';
  if (f.kind !== 'status') return 'unknown';
  if (REFUSAL_MESSAGES.has(f.details)) return 'definite';
  return REFUSAL_CODES.has(f.code) ? 'definite' : 'unknown';
}

export function readVerdict(f: CallFailure): ReadVerdict {
  if (f.kind !== 'status') return 'resend';
  const transient =
    f.code === GrpcStatus.UNAVAILABLE ||
    f.code === GrpcStatus.DEADLINE_EXCEEDED ||
    f.code === GrpcStatus.CANCELLED ||
    REFUSAL_MESSAGES.has(f.details);
  return transient ? 'resend' : 'refusal';
}

export function describeFailure(f: CallFailure): string {
  return f.kind === 'status' ? `${f.code} ${f.details}` : f.kind;
}
