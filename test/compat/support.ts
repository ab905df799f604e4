// Small helpers shared by the compatibility suites: JSON with 64-bit integers, base64 fields.

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
