// The service registry's key layout and value format: those of etcd's Go naming package
// (go.etcd.io/etcd/client/v3/naming), so that gRPC-Go's etcd resolver finds Node services and
// Registry.watch finds Go services. Pure functions only; registry.ts does the I/O.
//
// What etcd's source fixes (client/v3/naming/endpoints/endpoints.go, endpoints_impl.go,
// endpoints/internal/update.go, client/v3/naming/resolver/resolver.go):
//
// - Key: `<target>/<anything>`. The Manager's Update rejects a key not prefixed by `target + "/"`
//   (codes.InvalidArgument). Its List and NewWatchChannel (which the resolver uses) read and watch
//   the prefix `target` itself, WITHOUT the "/": a Go resolver for "svc" also sees "svc2/x". We
//   read `target + "/"`, the prefix every Manager-written key has; docs/registry.md warns about
//   service names that are prefixes of one another.
// - Value: encoding/json of internal.Update{Op, Addr, Metadata}: no struct tags, so the field
//   names are "Op", "Addr", "Metadata", in that order; Op is a uint8 with Add = 0, Delete = 1
//   (iota); Metadata is an `any`, so an absent one is `null`. Removal is a key delete: the
//   Manager never stores Op = Delete, and the watch turns a delete event into Delete itself.
// - Decoding: the Manager unmarshals every value into internal.Update and SKIPS (logs and
//   continues) a value it cannot unmarshal; it never looks at the stored Op, so any value that
//   unmarshals is an Add. We accept the same values, with Go's rules below, except that we also
//   refuse one with an empty Addr and a null Metadata, which update.go calls invalid ("it is not
//   valid having both empty string Addr and nil Metadata").
//
// Go's encoding/json rules that matter for equal bytes: compact output; object keys of a map in
// sorted order (Metadata decoded from JSON, or built as map[string]any, is a map); "<", ">" and
// "&" escaped as \u003c, \u003e, \u0026 and U+2028/U+2029 as \u2028/\u2029 (json.Marshal's HTML
// escaping, always on); numbers as ES6 number-to-string. On decoding, field names match
// case-insensitively and unknown fields are ignored; a wrong type is an error.
import { queuePrefix } from './recipe-keys.js';

/** A JSON value, as Metadata may be. */
export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** One instance of a service, as stored. */
export interface Endpoint {
  /** The address clients dial (`host:port`): gRPC's resolver.Address.Addr. */
  readonly addr: string;
  /** Anything JSON; `null` when absent (Go's nil). */
  readonly metadata: JsonValue;
}

/** The Op values of internal.Update (update.go: `Add Operation = iota`, then Delete). */
export const goOpAdd = 0;
export const goOpDelete = 1;
/** Op is a Go uint8. */
const goUint8Max = 255;

/** The prefix of a service's keys: `service + "/"` (the Manager's key rule). */
export function servicePrefix(service: string): string {
  return queuePrefix(service);
}

/** The key of an instance: `service/id`. */
export function instanceKey(service: string, id: string): string {
  if (id.length === 0) throw new RangeError('registry: instance id must not be empty');
  return `${servicePrefix(service)}${id}`;
}

/** Go's json.Marshal string escaping beyond JSON.stringify's (HTML-safe, JSONP-safe). */
function goEscape(json: string): string {
  return json.replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** JSON with object keys sorted (how encoding/json writes a map), compact. */
function sortedJson(v: JsonValue): string {
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v) as string | undefined;
    if (s === undefined || (typeof v === 'number' && !Number.isFinite(v))) {
      // encoding/json fails on NaN and ±Inf (UnsupportedValueError); so do we.
      throw new RangeError(`registry: metadata value ${String(v)} is not JSON`);
    }
    return s;
  }
  if (Array.isArray(v)) return `[${(v as readonly JsonValue[]).map(sortedJson).join(',')}]`;
  const o = v as { readonly [key: string]: JsonValue };
  const keys = Object.keys(o).sort(compareUtf8);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson(o[k] as JsonValue)}`).join(',')}}`;
}

/** Go sorts map keys as strings, i.e. by their UTF-8 bytes. */
function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The value bytes Go's Manager.AddEndpoint writes for this endpoint. */
export function encodeEndpoint(e: Endpoint): Buffer {
  const json = `{"Op":${goOpAdd},"Addr":${JSON.stringify(e.addr)},"Metadata":${sortedJson(e.metadata)}}`;
  return Buffer.from(goEscape(json), 'utf8');
}

/** Why a value is not an endpoint Go would resolve. */
export type DecodeFailure = 'not-json' | 'not-an-object' | 'bad-op' | 'bad-addr' | 'empty';

export type Decoded =
  | { readonly ok: true; readonly endpoint: Endpoint }
  | { readonly ok: false; readonly why: DecodeFailure; readonly detail: string };

/** ASCII case folding, as encoding/json matches field names (none of ours has a special fold). */
function fieldOf(name: string): 'Op' | 'Addr' | 'Metadata' | undefined {
  const lower = name.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (lower === 'op') return 'Op';
  if (lower === 'addr') return 'Addr';
  if (lower === 'metadata') return 'Metadata';
  return undefined;
}

/** A stored value, decoded as the Manager's json.Unmarshal into internal.Update would. */
export function decodeEndpoint(value: Uint8Array): Decoded {
  let v: unknown;
  const text = Buffer.from(value).toString('utf8');
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { ok: false, why: 'not-json', detail: (e as Error).message };
  }
  // Go's Unmarshal of JSON null into a struct succeeds and leaves it zero: that is "empty" below.
  if (v !== null && (typeof v !== 'object' || Array.isArray(v))) {
    return {
      ok: false,
      why: 'not-an-object',
      detail: `a JSON ${Array.isArray(v) ? 'array' : typeof v}`,
    };
  }
  let addr = '';
  let metadata: JsonValue = null;
  // Later fields win, as they do in Go's decoder; null leaves a non-pointer field unchanged.
  for (const [k, x] of Object.entries((v ?? {}) as Record<string, unknown>)) {
    const f = fieldOf(k);
    if (f === 'Op') {
      if (x !== null && !(Number.isInteger(x) && (x as number) >= 0 && (x as number) <= goUint8Max))
        return { ok: false, why: 'bad-op', detail: `Op ${JSON.stringify(x)} is not a uint8` };
    } else if (f === 'Addr') {
      if (x !== null && typeof x !== 'string')
        return { ok: false, why: 'bad-addr', detail: `Addr ${JSON.stringify(x)} is not a string` };
      if (typeof x === 'string') addr = x;
    } else if (f === 'Metadata') {
      metadata = x as JsonValue;
    }
  }
  if (addr === '' && metadata === null)
    return { ok: false, why: 'empty', detail: 'no Addr and no Metadata' };
  return { ok: true, endpoint: { addr, metadata } };
}
