// Incremental 32-bit FNV-1a hashing for event logs and log-prefix hashes. Cheap, deterministic and
// good enough to detect divergence; not a cryptographic hash.

export const FNV_OFFSET = 2166136261;

export function fnvString(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

export function fnvNumber(h: number, n: number): number {
  // Mix a float64 as two 32-bit halves so large integers are hashed exactly.
  const lo = n >>> 0;
  const hi = Math.floor(n / 4294967296) >>> 0;
  h ^= lo;
  h = Math.imul(h, 16777619);
  h ^= hi;
  h = Math.imul(h, 16777619);
  return h >>> 0;
}

export function fnvBytes(h: number, b: Uint8Array): number {
  for (let i = 0; i < b.length; i++) {
    h ^= b[i] as number;
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}
