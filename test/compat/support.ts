// Small helpers shared by the compatibility suites: bounded polling and JSON with 64-bit integers.

/** Named limit: how long a poll waits for something that must happen eventually. */
export const eventuallyMsDefault = 15_000;
/** Pause between polls. */
const pollIntervalMs = 50;

/**
 * Call `probe` until it returns a value other than undefined; throw after `timeoutMs` with
 * `what` and the last probe's description. A deadline bounds a hang; it does not assert speed.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number = eventuallyMsDefault,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, pollIntervalMs));
  }
}

/** `eventually` for a synchronous condition: poll `check` until it is true. */
export async function eventuallyTrue(
  what: string,
  check: () => boolean,
  timeoutMs: number = eventuallyMsDefault,
): Promise<void> {
  await eventually(what, () => Promise.resolve(check() ? true : undefined), timeoutMs);
}

/**
 * JSON.parse that keeps integers of 16 or more digits as decimal strings, so cluster, member and
 * lease IDs (uint64/int64) survive; etcdctl prints them as bare JSON numbers.
 */
export function parseJsonLongs(text: string): unknown {
  return JSON.parse(text.replace(/([:[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}

/** Decode a base64 field of etcdctl's JSON output (keys, values) as UTF-8. */
export function b64(text: unknown): string {
  return typeof text === 'string' ? Buffer.from(text, 'base64').toString('utf8') : '';
}
