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

/** A comma-separated list of TCP ports; exits with a clear message on bad input. */
export function parsePorts(
  flag: string,
  text: string | undefined,
  dflt: readonly number[],
): number[] {
  if (text === undefined) return [...dflt];
  const ports = text.split(',').map((s) => Number(s.trim()));
  if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
    process.stderr.write(`${flag} must be ports between 1 and 65535, comma-separated: ${text}\n`);
    process.exit(2);
  }
  return ports;
}
