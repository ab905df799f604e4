// A gRPC call's request metadata, from its HTTP/2 request headers (grpc/doc/PROTOCOL-HTTP2.md).
import type * as http2 from 'node:http2';

/** Request metadata: lower-case keys to text values; binary `-bin` keys and pseudo-headers left out. */
export function metadataOf(headers: http2.IncomingHttpHeaders): Map<string, string> {
  const out = new Map<string, string>();
  for (const key in headers) {
    if (key.startsWith(':') || key.endsWith('-bin')) continue;
    const v = headers[key];
    if (typeof v === 'string') out.set(key, v);
    else if (Array.isArray(v) && v.length > 0) out.set(key, v[v.length - 1] as string);
  }
  return out;
}
