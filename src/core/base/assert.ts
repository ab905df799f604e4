// Assertions for bugs, kept on in production. A failed assertion is a crash, never a handled
// error: it means the code's own model of the world is wrong.

export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: boolean, message: string | (() => string)): asserts condition {
  if (!condition) {
    throw new AssertionError(typeof message === 'string' ? message : message());
  }
}

export function unreachable(value: never, what = 'value'): never {
  throw new AssertionError(`unreachable ${what}: ${JSON.stringify(value)}`);
}
