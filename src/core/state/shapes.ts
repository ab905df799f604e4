// Checks that a value decoded from outside (tagged JSON from a log entry, a forwarded command, a
// snapshot section) has the shape its type promises, field by field, so that a malformed one is
// refused where it is decoded instead of throwing a TypeError wherever it is first used. One
// vocabulary for every decoder: command.ts, snapshot-codec.ts, the member table.

export type Shape = Readonly<Record<string, unknown>>;
export type Check = (v: unknown) => boolean;

/** A plain object: not null, an array or a byte string. */
export const isObject = (v: unknown): v is Shape =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
export const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
export const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
export const isString = (v: unknown): v is string => typeof v === 'string';
/** Revisions, limits, counts, TTLs: integers a double holds exactly. */
export const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
/** Clock readings: the leader's monotonic clock may have a fraction. */
export const isFinite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
export const isBigint = (v: unknown): v is bigint => typeof v === 'bigint';

/** An optional field: absent (tagged JSON drops undefined) or of its type. */
export const opt =
  (is: Check): Check =>
  (v) =>
    v === undefined || is(v);
/** A nullable field. */
export const orNull =
  (is: Check): Check =>
  (v) =>
    v === null || is(v);
export const oneOf =
  (...values: readonly string[]): Check =>
  (v) =>
    typeof v === 'string' && values.includes(v);
/** An array whose every element passes `is`. */
export const arrayOf =
  (is: Check): Check =>
  (v) =>
    Array.isArray(v) && v.every((x) => is(x));

/** A plain object whose named fields each pass their check (other fields are not looked at). */
export function fields(v: unknown, spec: Readonly<Record<string, Check>>): v is Shape {
  if (!isObject(v)) return false;
  // for-in rather than Object.entries: no array of pairs per call, on every decoded command.
  for (const name in spec) if (!(spec[name] as Check)(v[name])) return false;
  return true;
}

/** authpb.Permission as the auth store keeps it (auth-perms.ts). */
export const isPermission: Check = (v) =>
  fields(v, { permType: oneOf('READ', 'WRITE', 'READWRITE'), key: isBytes, rangeEnd: isBytes });
