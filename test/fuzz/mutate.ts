// Byte-level mutation for the decoder fuzz suites (test/fuzz/*.test.ts): valid encodings with
// bytes flipped, inserted, deleted, overwritten or cut off, as a damaged disk or a hostile or
// broken peer would hand them over, plus arbitrary bytes. Every suite runs fast-check with a
// fixed seed and a bounded number of runs, so a CI run is deterministic and a failure replays.
// `npm run fuzz` is the longer hunt: TENURE_FUZZ_SCALE times the runs (default 25 there), with
// TENURE_FUZZ_SEED (a fresh one if unset, printed so that a failure replays with it).
import assert from 'node:assert/strict';
import fc from 'fast-check';

/** The seed every fuzz suite runs with in `npm test`: a failure reproduces run after run. */
export const FUZZ_SEED_DEFAULT = 0x7e57;
/** Runs per property in `npm test`; each suite stays well under a minute on a 2-core machine. */
export const FUZZ_RUNS = 2000;

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number: '${v}'`);
  return n;
}

/** The seed of this run: TENURE_FUZZ_SEED, or the fixed one. */
export const FUZZ_SEED = envInt('TENURE_FUZZ_SEED', FUZZ_SEED_DEFAULT);
/** Multiplies every property's runs (TENURE_FUZZ_SCALE; 1 in `npm test`). */
export const FUZZ_SCALE = Math.max(1, envInt('TENURE_FUZZ_SCALE', 1));
if (FUZZ_SEED !== FUZZ_SEED_DEFAULT || FUZZ_SCALE !== 1)
  process.stderr.write(`fuzz: TENURE_FUZZ_SEED=${FUZZ_SEED} TENURE_FUZZ_SCALE=${FUZZ_SCALE}\n`);

/** fc.assert's parameters for a fuzz property: fixed seed, bounded runs, no time-based end. */
export function fuzzParams(runs = FUZZ_RUNS): fc.Parameters<unknown> {
  return { seed: FUZZ_SEED, numRuns: runs * FUZZ_SCALE, endOnFailure: true };
}

/** One edit of a byte string; `at` is a fraction of its length, so one edit fits any input. */
type Edit =
  | { readonly kind: 'flip'; readonly at: number; readonly bit: number }
  | { readonly kind: 'set'; readonly at: number; readonly byte: number }
  | { readonly kind: 'insert'; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: 'delete'; readonly at: number; readonly count: number }
  | { readonly kind: 'truncate'; readonly at: number }
  /** A u32 written over 4 bytes: length fields set to huge or off-by-one values. */
  | { readonly kind: 'u32'; readonly at: number; readonly value: number; readonly le: boolean };

const position = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

const interestingU32 = fc.oneof(
  fc.constantFrom(0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff),
  fc.nat({ max: 0xffffffff }),
);

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: position, bit: fc.nat({ max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: position, byte: fc.nat({ max: 255 }) }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: position,
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: position,
    count: fc.integer({ min: 1, max: 8 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), at: position }),
  fc.record({
    kind: fc.constant('u32' as const),
    at: position,
    value: interestingU32,
    le: fc.boolean(),
  }),
);

function apply(bytes: Uint8Array, e: Edit): Uint8Array {
  const b = Buffer.from(bytes);
  const at = Math.floor(e.at * (b.length + (e.kind === 'insert' ? 1 : 0)));
  switch (e.kind) {
    case 'flip':
      if (b.length > 0) b[at] = (b[at] as number) ^ (1 << e.bit);
      return b;
    case 'set':
      if (b.length > 0) b[at] = e.byte;
      return b;
    case 'insert':
      return Buffer.concat([b.subarray(0, at), e.bytes, b.subarray(at)]);
    case 'delete':
      return Buffer.concat([b.subarray(0, at), b.subarray(at + e.count)]);
    case 'truncate':
      return b.subarray(0, at);
    case 'u32': {
      if (b.length < 4) return b;
      const where = Math.min(at, b.length - 4);
      if (e.le) b.writeUInt32LE(e.value, where);
      else b.writeUInt32BE(e.value, where);
      return b;
    }
  }
}

/** `valid` encodings with 1 to 4 edits each. */
export function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(valid, fc.array(edit, { minLength: 1, maxLength: 4 }))
    .map(([bytes, edits]) => new Uint8Array(edits.reduce(apply, bytes)));
}

/** Mutated valid encodings, valid ones untouched, and arbitrary bytes: what a decoder may meet. */
export function hostile(
  valid: fc.Arbitrary<Uint8Array>,
  maxArbitraryBytes = 256,
): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    { weight: 6, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: valid },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: maxArbitraryBytes }) },
  );
}

/**
 * Run `decode` on `input`: it must return, or throw an instance of one of `allowed` (the
 * decoder's own typed errors). Anything else (a TypeError, a RangeError, an assertion) fails the
 * property with the input in the message.
 */
export function decodesOrRefuses<T>(
  decode: () => T,
  allowed: readonly (abstract new (...args: never[]) => Error)[],
  input: Uint8Array | string,
): T | undefined {
  try {
    return decode();
  } catch (e) {
    if (allowed.some((c) => e instanceof c)) return undefined;
    const shown = typeof input === 'string' ? input : Buffer.from(input).toString('hex');
    assert.fail(
      `decoder threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} on ${shown}`,
    );
  }
}
