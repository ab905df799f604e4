// Keys and values in the baseline's format: keys exactly 16 bytes, `k/` + a workload letter + the
// run's 3-character tag + 10 digits; values 64 random bytes.
import { randomBytes } from 'node:crypto';

export const valueBytes = 64;

export function key(letter: string, tag: string, i: number): string {
  return `k/${letter}${tag}${String(i).padStart(10, '0')}`;
}

export function randomValue(): Buffer {
  return randomBytes(valueBytes);
}
