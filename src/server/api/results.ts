// Unwrapping the machine's results at the API edge: an `error` result becomes the thrown status
// (etcd's exact code and text), any other type than the one proposed is a bug.
import type { EtcdResult } from '../../core/state/etcd-machine.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import { isEtcdError } from '../../core/state/etcd-errors.js';
import { ApiError } from './status.js';

type ResultOf<T extends EtcdResult['type']> = Extract<EtcdResult, { type: T }>;

/** The result of a proposed command of type `type`, or throws its error as an ApiError. */
export function expectResult<T extends EtcdResult['type']>(r: EtcdResult, type: T): ResultOf<T> {
  if (r.type === 'error') throw new ApiError(r.error);
  if (r.type !== type) throw new Error(`tenure: ${type} proposal returned a ${r.type} result`);
  return r as ResultOf<T>;
}

/** A query's value, or throws its error (the machine's reads return errors as values). */
export function expectValue<T extends object>(v: T | EtcdError): T {
  if (isEtcdError(v)) throw new ApiError(v);
  return v;
}
