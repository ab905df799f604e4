// Reading request objects as @grpc/proto-loader decodes them (keepCase, longs as decimal strings,
// enums by name, defaults filled, oneofs named by a virtual field; see proto/README.md). The
// objects come from the network, so every field is `unknown` until narrowed here: a field of the
// wrong type is an InvalidArgument for the caller, never a crash of the server.
import { ApiError } from './status.js';

/** A proto-loader message object: field name to value. */
export type WireObject = Readonly<Record<string, unknown>>;

const EMPTY: WireObject = Object.freeze({});

/** An InvalidArgument status naming the field, for input that no etcd client sends. */
export function badField(name: string, want: string): ApiError {
  return new ApiError({
    code: 'InvalidArgument',
    message: `tenure: field ${name} must be ${want}`,
  });
}

/** A request or sub-message; null/undefined (an unset message field) reads as empty. */
export function asMessage(x: unknown, name = 'request'): WireObject {
  if (x === null || x === undefined) return EMPTY;
  if (typeof x !== 'object' || Array.isArray(x) || x instanceof Uint8Array) {
    throw badField(name, 'a message');
  }
  return x as WireObject;
}

/**
 * A bytes field (Buffer from proto-loader); unset reads as empty. Returned as a plain Uint8Array
 * over the same memory: a Buffer's toJSON would defeat the log's tagged-JSON encoding of bytes.
 */
export function bytesField(m: WireObject, name: string): Uint8Array {
  const v = m[name];
  if (v === undefined || v === null) return new Uint8Array(0);
  if (v instanceof Uint8Array) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw badField(name, 'bytes');
}

/** A bytes field that may be unset, kept apart from "set to empty" where the core cares. */
export function optionalBytesField(m: WireObject, name: string): Uint8Array | undefined {
  const v = m[name];
  return v === undefined || v === null ? undefined : bytesField(m, name);
}

/** An int64/uint64 field as a bigint (proto-loader gives decimal strings). */
export function bigintField(m: WireObject, name: string): bigint {
  const v = m[name];
  if (v === undefined || v === null || v === '') return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw badField(name, 'an integer');
}

/**
 * An int64 field as a number. Revisions, limits and counts fit in 2^53 in practice; larger
 * values saturate (a limit of 2^63-1 still means "no limit", a revision that large is still in
 * the future), which keeps etcd's answers for them.
 */
export function numberField(m: WireObject, name: string): number {
  const v = bigintField(m, name);
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  if (v > max) return Number.MAX_SAFE_INTEGER;
  if (v < -max) return -Number.MAX_SAFE_INTEGER;
  return Number(v);
}

export function boolField(m: WireObject, name: string): boolean {
  const v = m[name];
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  throw badField(name, 'a boolean');
}

export function stringField(m: WireObject, name: string): string {
  const v = m[name];
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  throw badField(name, 'a string');
}

/**
 * An enum field by name. Values the proto does not declare arrive as numbers (proto-loader keeps
 * unknown enum values), and read as their decimal text so callers can refuse them.
 */
export function enumField(m: WireObject, name: string, zero: string): string {
  const v = m[name];
  if (v === undefined || v === null) return zero;
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  throw badField(name, 'an enum');
}

export function repeatedField(m: WireObject, name: string): readonly unknown[] {
  const v = m[name];
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v as readonly unknown[];
  throw badField(name, 'a list');
}
