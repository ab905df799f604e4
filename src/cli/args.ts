// Parsers for command-line values, shared by the subcommands: each rejects bad input with a
// message that names what was expected and what was given.
import { InvalidArgumentError } from 'commander';

export function integer(min: number): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected an integer ≥ ${min}, got ${JSON.stringify(text)}`);
    }
    return n;
  };
}

export function positive(text: string): number {
  const n = Number(text);
  if (!(Number.isFinite(n) && n > 0)) {
    throw new InvalidArgumentError(`expected a number > 0, got ${text}`);
  }
  return n;
}

export function probability(text: string): number {
  const p = Number(text);
  if (!(p >= 0 && p <= 1)) throw new InvalidArgumentError(`expected 0 ≤ p ≤ 1, got ${text}`);
  return p;
}
