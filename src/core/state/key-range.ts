// Keys and key ranges with etcd's conventions (RangeRequest's range_end in etcd's
// api/etcdserverpb/rpc.proto; getPrefix in client/v3/op.go). Keys are held inside the store as
// byte strings: one UTF-16 code unit per byte (0..255), so JavaScript's string order is exactly
// etcd's bytewise order and the strings can key a Map.

/** A key as a byte string: each character's code is one byte of the key. */
export type ByteKey = string;

export function toByteKey(bytes: Uint8Array): ByteKey {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i] as number);
  return s;
}

export function fromByteKey(key: ByteKey): Uint8Array {
  const out = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) out[i] = key.charCodeAt(i);
  return out;
}

/** Bytewise comparison: negative, zero or positive. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return compareBytes(a, b) === 0;
}

/**
 * The keys a request covers: one key (empty range_end), every key from `key` on (range_end
 * "\0"), or the half-open interval [key, end) (which may be empty when key >= end).
 */
export type KeySpan =
  | { readonly kind: 'single'; readonly key: ByteKey }
  | { readonly kind: 'from'; readonly key: ByteKey }
  | { readonly kind: 'interval'; readonly key: ByteKey; readonly end: ByteKey };

const FROM_KEY_END = '\0';

export function keySpan(key: Uint8Array, rangeEnd: Uint8Array | undefined): KeySpan {
  const k = toByteKey(key);
  if (rangeEnd === undefined || rangeEnd.length === 0) return { kind: 'single', key: k };
  const end = toByteKey(rangeEnd);
  if (end === FROM_KEY_END) return { kind: 'from', key: k };
  return { kind: 'interval', key: k, end };
}

export function spanContains(span: KeySpan, key: ByteKey): boolean {
  switch (span.kind) {
    case 'single':
      return key === span.key;
    case 'from':
      return key >= span.key;
    case 'interval':
      return key >= span.key && key < span.end;
  }
}

/** True when the span can hold no key at all (an interval with key >= end). */
export function spanIsEmpty(span: KeySpan): boolean {
  return span.kind === 'interval' && span.key >= span.end;
}

/**
 * The client's prefix rule (`getPrefix`): the range_end that covers every key starting with
 * `prefix`. Increments the last byte below 0xff and truncates after it; all 0xff (or empty)
 * gives "\0", the from-key marker.
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const b = prefix[i] as number;
    if (b < 0xff) {
      const end = prefix.slice(0, i + 1);
      end[i] = b + 1;
      return end;
    }
  }
  return new Uint8Array([0]);
}
