// The member endpoints a client talks to, and which one it prefers. Calls start at the preferred
// endpoint; a connection failure moves the preference to the next one in order (round robin), so
// later calls and stream reconnects go to a member that was last seen working.

/** `http://host:port` or `host:port` → `host:port`; TLS is not supported yet. */
export function parseEndpoint(endpoint: string): string {
  const m = /^(?:(https?):\/\/)?([^/]+)\/?$/.exec(endpoint.trim());
  if (m === null || m[2] === undefined) {
    throw new TypeError(`tenure/client: bad endpoint ${JSON.stringify(endpoint)}`);
  }
  if (m[1] === 'https') {
    throw new TypeError(`tenure/client: TLS endpoints are not supported yet (${endpoint})`);
  }
  return m[2];
}

export class Endpoints {
  readonly all: readonly string[];
  #preferred = 0;

  constructor(endpoints: readonly string[]) {
    if (endpoints.length === 0) throw new TypeError('tenure/client: no endpoints given');
    this.all = endpoints.map(parseEndpoint);
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
