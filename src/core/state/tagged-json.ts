// The encoding of commands and snapshots: JSON, with the two types JSON lacks written as tagged
// one-field objects: a bigint as {"$n":"<decimal>"} and a Uint8Array as {"$b":"<hex>"}. Byte
// strings (keys inside the store) are plain JSON strings, which escape every code unit exactly.
// Chosen over a binary format for now because log entries and snapshots stay readable in tests
// and dumps; the cost is size (hex doubles bytes).

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const HEX = '0123456789abcdef';

function toHex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) {
    const x = b[i] as number;
    s += (HEX[x >> 4] as string) + (HEX[x & 15] as string);
  }
  return s;
}

function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0 || !/^[0-9a-f]*$/.test(s)) throw new SyntaxError('tagged-json: bad hex');
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function replacer(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return { $n: v.toString() };
  if (v instanceof Uint8Array) return { $b: toHex(v) };
  return v;
}

function reviver(_key: string, v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const keys = Object.keys(v);
  if (keys.length !== 1) return v;
  const o = v as { $n?: unknown; $b?: unknown };
  if (typeof o.$n === 'string') return BigInt(o.$n);
  if (typeof o.$b === 'string') return fromHex(o.$b);
  return v;
}

export function encodeTagged(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, replacer));
}

/** Parse; throws SyntaxError on malformed input (the caller decides what that means). */
export function decodeTagged(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data), reviver) as unknown;
}
