// The member endpoints a client talks to, and which one it prefers. Calls start at the preferred
// endpoint; a connection failure moves the preference to the next one in order (round robin), so
// later calls and stream reconnects go to a member that was last seen working.
import type { EndpointScheme } from './tls.js';

export interface ParsedEndpoint {
  /** `host:port`, the channel's target. */
  readonly hostPort: string;
  /** The URL's scheme; undefined for a bare `host:port` (TLS then iff `tls` is given: tls.ts). */
  readonly scheme: EndpointScheme;
}

/** `https://host:port`, `http://host:port` or `host:port` → its `host:port` and scheme. */
export function parseEndpointUrl(endpoint: string): ParsedEndpoint {
  const m = /^(?:(https?):\/\/)?([^/]+)\/?$/.exec(endpoint.trim());
  if (m === null || m[2] === undefined) {
    throw new TypeError(`tenure/client: bad endpoint ${JSON.stringify(endpoint)}`);
  }
  return { hostPort: m[2], scheme: m[1] as EndpointScheme };
}

/** `https://host:port`, `http://host:port` or `host:port` → `host:port`. */
export function parseEndpoint(endpoint: string): string {
  return parseEndpointUrl(endpoint).hostPort;
}

export class Endpoints {
  readonly all: readonly string[];
  /** Each endpoint's scheme as given, by `host:port`. */
  readonly #schemes: ReadonlyMap<string, EndpointScheme>;
  #preferred = 0;

  constructor(endpoints: readonly string[]) {
    if (endpoints.length === 0) throw new TypeError('tenure/client: no endpoints given');
    const parsed = endpoints.map(parseEndpointUrl);
    this.all = parsed.map((p) => p.hostPort);
    this.#schemes = new Map(parsed.map((p) => [p.hostPort, p.scheme]));
  }

  /**
   * The scheme `endpoint` (`host:port`) was given with; undefined if bare or not one of ours.
   */
  scheme(endpoint: string): EndpointScheme {
    return this.#schemes.get(endpoint);
  }

  /** `endpoint` (`host:port`) as it was given: with its scheme, if it had one. */
  url(endpoint: string): string {
    const scheme = this.#schemes.get(endpoint);
    return scheme === undefined ? endpoint : `${scheme}://${endpoint}`;
  }

  get preferred(): string {
    return this.all[this.#preferred] as string;
  }

  /** Endpoints in the order one call tries them: the preferred one first. */
  order(): string[] {
    const n = this.all.length;
    return Array.from({ length: n }, (_, i) => this.all[(this.#preferred + i) % n] as string);
  }

  /** `endpoint` failed: if it is still the preferred one, prefer the next. */
  failed(endpoint: string): void {
    if (this.preferred === endpoint) this.#preferred = (this.#preferred + 1) % this.all.length;
  }

  /** `endpoint` answered: prefer it from now on. */
  succeeded(endpoint: string): void {
    const i = this.all.indexOf(endpoint);
    if (i >= 0) this.#preferred = i;
  }
}
