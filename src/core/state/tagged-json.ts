// The encoding of commands and snapshots: JSON, with the two types JSON lacks written as tagged
// one-field objects: a bigint as {"$n":"<decimal>"} and a Uint8Array as {"$b":"<hex>"}. Byte
// strings (keys inside the store) are plain JSON strings, which escape every code unit exactly.
// Chosen over a binary format for now because log entries and snapshots stay readable in tests
// and dumps; the cost is size (hex doubles bytes).

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const HEX_PAIRS: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);
/** Value of each hex digit's char code, or -1. */
const HEX_VALUE: Int8Array = (() => {
  const t = new Int8Array(128).fill(-1);
  for (let i = 0; i < 16; i++) t['0123456789abcdef'.charCodeAt(i)] = i;
  return t;
})();

function toHex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += HEX_PAIRS[b[i] as number] as string;
  return s;
}

function hexDigit(s: string, i: number): number {
  const c = s.charCodeAt(i);
  const v = c < 128 ? (HEX_VALUE[c] as number) : -1;
  if (v < 0) throw new SyntaxError('tagged-json: bad hex');
  return v;
}

function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0) throw new SyntaxError('tagged-json: bad hex');
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = (hexDigit(s, 2 * i) << 4) | hexDigit(s, 2 * i + 1);
  return out;
}

/**
 * Looks at the holder's own value, not `v`: JSON.stringify calls toJSON first, which would turn
 * a Node Buffer (a Uint8Array) into {type, data} before the replacer saw it.
 */
function replacer(this: unknown, key: string, v: unknown): unknown {
  const orig = (this as Record<string, unknown>)[key];
  if (orig instanceof Uint8Array) return { $b: toHex(orig) };
  if (typeof v === 'bigint') return { $n: v.toString() };
  return v;
}

/** Replace tagged objects in a freshly parsed value, in place (faster than a JSON.parse reviver). */
function untag(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = untag(v[i]);
    return v;
  }
  const o = v as Record<string, unknown>;
  let n = 0;
  for (const k in o) {
    n += 1;
    o[k] = untag(o[k]);
  }
  if (n === 1) {
    if (typeof o.$n === 'string') return BigInt(o.$n);
    if (typeof o.$b === 'string') return fromHex(o.$b);
  }
  return v;
}

export function encodeTagged(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, replacer));
}

/** Parse; throws SyntaxError on malformed input (the caller decides what that means). */
export function decodeTagged(data: Uint8Array): unknown {
  return untag(JSON.parse(decoder.decode(data)));
}
