// The binary form of a put command in the Raft log. Tagged JSON spells a 64-byte value as 128 hex
// digits inside an object; this is the key and value as they are, behind a 2-byte header:
//
//   u8 format (PUT_FORMAT; tagged JSON always starts with '{')
//   u8 flags: bits 0-1 prevKv, 2-3 ignoreValue, 4-5 ignoreLease (0 absent, 1 false, 2 true),
//             bit 6 lease present
//   [i64 lease, big-endian, when bit 6 is set]
//   u32 key length, key bytes, value bytes (the rest)
//
// Optional fields keep "absent" apart from "false" so that a decoded request is the one encoded.
import type { PutRequest } from './kv-types.js';

/** First byte of a binary put; never '{' (0x7b), which starts every tagged-JSON command. */
export const PUT_FORMAT = 0x01;

const LEASE_PRESENT = 0x40;
const HEADER_BYTES = 2;
const LEASE_BYTES = 8;
const KEY_LENGTH_BYTES = 4;

function triState(v: boolean | undefined): number {
  return v === undefined ? 0 : v ? 2 : 1;
}

function fromTriState(bits: number): boolean | undefined {
  return bits === 0 ? undefined : bits === 2;
}

export function encodePut(r: PutRequest): Uint8Array {
  const hasLease = r.lease !== undefined;
  const head = HEADER_BYTES + (hasLease ? LEASE_BYTES : 0);
  const out = new Uint8Array(head + KEY_LENGTH_BYTES + r.key.length + r.value.length);
  const view = new DataView(out.buffer);
  out[0] = PUT_FORMAT;
  out[1] =
    triState(r.prevKv) |
    (triState(r.ignoreValue) << 2) |
    (triState(r.ignoreLease) << 4) |
    (hasLease ? LEASE_PRESENT : 0);
  if (r.lease !== undefined) view.setBigInt64(HEADER_BYTES, r.lease);
  view.setUint32(head, r.key.length);
  out.set(r.key, head + KEY_LENGTH_BYTES);
  out.set(r.value, head + KEY_LENGTH_BYTES + r.key.length);
  return out;
}

/**
 * The request, or null when `data` is not a well-formed binary put. Key and value are copies: the
 * store keeps them, and `data` may be a view into a much larger network or file buffer.
 */
export function decodePut(data: Uint8Array): PutRequest | null {
  if (data.length < HEADER_BYTES + KEY_LENGTH_BYTES || data[0] !== PUT_FORMAT) return null;
  const flags = data[1] as number;
  if (
    (flags & 0x80) !== 0 ||
    (flags & 0x03) === 3 ||
    (flags & 0x0c) === 12 ||
    (flags & 0x30) === 48
  )
    return null;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const hasLease = (flags & LEASE_PRESENT) !== 0;
  const head = HEADER_BYTES + (hasLease ? LEASE_BYTES : 0);
  if (data.length < head + KEY_LENGTH_BYTES) return null;
  const keyLength = view.getUint32(head);
  const keyStart = head + KEY_LENGTH_BYTES;
  if (keyStart + keyLength > data.length) return null;
  const key = data.slice(keyStart, keyStart + keyLength);
  const value = data.slice(keyStart + keyLength);
  const prevKv = fromTriState(flags & 0x03);
  const ignoreValue = fromTriState((flags >> 2) & 0x03);
  const ignoreLease = fromTriState((flags >> 4) & 0x03);
  return {
    key,
    value,
    ...(hasLease ? { lease: view.getBigInt64(HEADER_BYTES) } : {}),
    ...(prevKv === undefined ? {} : { prevKv }),
    ...(ignoreValue === undefined ? {} : { ignoreValue }),
    ...(ignoreLease === undefined ? {} : { ignoreLease }),
  };
}
