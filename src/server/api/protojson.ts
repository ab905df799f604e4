// protojson as etcd's gRPC gateway speaks it (`registerGateway` in etcd server/embed/serve.go),
// done generically by protobufjs reflection over tenure's protos: proto field names
// (lowerCamelCase names are accepted on input too), 64-bit integers as decimal strings, bytes as
// base64, enums by name, zero values omitted on output, unknown input fields ignored.
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { PROTO_FILES, protoDir } from './protos.js';

/** Reflection over the same .proto files proto-loader reads. */
export function loadProtoRoot(): protobuf.Root {
  const dir = protoDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(dir, target);
  root.loadSync([...PROTO_FILES], { keepCase: true });
  root.resolveAll();
  return root;
}

/** The object shape proto-loader hands to handlers (proto/README.md options). */
const LOADER_SHAPE: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

const INT64_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

const camel = (name: string): string =>
  name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** Copy the input with every field under its proto name (protojson accepts both spellings). */
function protoNamed(type: protobuf.Type, json: unknown, path: string): Record<string, unknown> {
  if (!isPlainObject(json)) throw new TypeError(`${path || 'body'}: JSON object expected`);
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const value = json[field.name] ?? json[camel(field.name)];
    if (value === undefined || value === null) continue;
    const nested = field.resolvedType;
    if (nested instanceof protobuf.Type) {
      const at = `${path}${path ? '.' : ''}${field.name}`;
      out[field.name] = field.repeated
        ? asArray(value, at).map((v, i) => protoNamed(nested, v, `${at}[${i}]`))
        : protoNamed(nested, value, at);
    } else {
      out[field.name] = value;
    }
  }
  return out;
}

function asArray(x: unknown, path: string): unknown[] {
  if (!Array.isArray(x)) throw new TypeError(`${path}: JSON array expected`);
  return x as unknown[];
}

export interface DecodedRequest {
  /** The request as proto-loader would have decoded it from the wire. */
  readonly request: object;
  /** Size of its protobuf encoding, for the request size limit. */
  readonly encodedBytes: number;
}

/** A JSON request body → the handler's request object; throws TypeError on malformed input. */
export function fromProtoJson(type: protobuf.Type, json: unknown): DecodedRequest {
  const message = type.fromObject(protoNamed(type, json, ''));
  const problem = type.verify(message);
  if (problem !== null) throw new TypeError(problem);
  return {
    request: type.toObject(message, LOADER_SHAPE),
    encodedBytes: type.encode(message).finish().length,
  };
}

/** A handler's response object → protojson (EmitUnpopulated false, UseProtoNames true). */
export function toProtoJson(type: protobuf.Type, obj: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isPlainObject(obj)) return out;
  for (const field of type.fieldsArray) {
    const value = obj[field.name];
    if (value === undefined || value === null) continue;
    if (field.repeated) {
      if (!Array.isArray(value) || value.length === 0) continue;
      out[field.name] = (value as unknown[]).map((v) => jsonValue(field, v));
      continue;
    }
    const v = jsonValue(field, value);
    // Zero scalars (an enum's zero value included) are left out; a set message field is kept
    // even when empty.
    if (field.resolvedType instanceof protobuf.Type || !isZero(field, v)) out[field.name] = v;
  }
  return out;
}

function isZero(field: protobuf.Field, v: unknown): boolean {
  const t = field.resolvedType;
  if (t instanceof protobuf.Enum) return typeof v !== 'string' || t.values[v] === 0;
  return v === '0' || v === 0 || v === false || v === '' || v === undefined;
}

function jsonValue(field: protobuf.Field, v: unknown): unknown {
  const t = field.resolvedType;
  if (t instanceof protobuf.Type) return toProtoJson(t, v);
  if (t instanceof protobuf.Enum) {
    // Undeclared values have no name; protojson writes them as numbers.
    return typeof v === 'number' ? (t.valuesById[v] ?? v) : v;
  }
  if (field.type === 'bytes') {
    return v instanceof Uint8Array
      ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
      : '';
  }
  if (INT64_TYPES.has(field.type)) return typeof v === 'bigint' ? v.toString() : String(v);
  return v;
}
