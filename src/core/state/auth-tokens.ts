// etcd's simple tokens (auth/simple_token.go): `<16 random letters>.<raft index>`, registered on
// every member when the Authenticate entry applies, dropped when the user is deleted or changes
// password and when auth is disabled. Local to a member, like watches: not part of the replicated
// state, its snapshot or its digest.
//
// Expiry is sliding, as in etcd: each successful lookup resets a token's TTL (`--auth-token-ttl`,
// default 300 s). A token's life starts when it is registered, on the member's own monotonic
// clock (`now`, set by the API layer; the table is local, so this keeps apply deterministic);
// without a clock it starts at the first lookup or sweep that sees it. The API layer sweeps at most every AUTH_TOKEN_SWEEP_INTERVAL_MS (etcd's
// keeper ticks each second), on every token lookup and every Authenticate, so no timer keeps a
// process alive and the table holds at most the tokens issued within about one TTL.

/** etcd's simpleTokenTTLDefault: 300 s. */
export const AUTH_TOKEN_TTL_MS_DEFAULT = 300_000;
/** How often the API layer sweeps expired tokens (etcd's simpleTokenKeeper ticks each second). */
export const AUTH_TOKEN_SWEEP_INTERVAL_MS = 1_000;
/** Letters before the dot (etcd's defaultSimpleTokenLength). */
export const AUTH_TOKEN_PREFIX_LENGTH = 16;

interface TokenEntry {
  readonly user: string;
  /** Monotonic ms of the last use; NaN until a lookup or a sweep first sees the token. */
  lastUsedMs: number;
}

export class TokenTable {
  private readonly tokens = new Map<string, TokenEntry>();
  private lastSweepMs = -Infinity;
  /** `--auth-token-ttl`, in ms. */
  ttlMs = AUTH_TOKEN_TTL_MS_DEFAULT;
  /** Tokens of entries at or below this index were issued before this process started. */
  private issuedThrough = 0;
  /** The member's monotonic clock, in ms; NaN until the API layer sets it. */
  now: () => number = () => NaN;

  get size(): number {
    return this.tokens.size;
  }

  /** `index`: the log index of the Authenticate entry that issued it. */
  register(token: string, user: string, index: number): void {
    if (index <= this.issuedThrough) return;
    this.tokens.set(token, { user, lastUsedMs: this.now() });
  }

  /**
   * A restarted member forgets the tokens it held, as etcd's in-memory simple tokens are lost:
   * those of the entries its log held at start are not registered again when it replays them
   * (other members, which did not restart, still know them).
   */
  forgetIssuedThrough(index: number): void {
    this.issuedThrough = Math.max(this.issuedThrough, index);
    for (const token of [...this.tokens.keys()]) {
      const at = tokenIndex(token);
      if (at !== null && at <= index) this.tokens.delete(token);
    }
  }

  /** The token's user, renewing its TTL; undefined when unknown or expired. */
  lookup(token: string, nowMs: number): string | undefined {
    const e = this.tokens.get(token);
    if (e === undefined) return undefined;
    if (e.lastUsedMs + this.ttlMs <= nowMs) {
      this.tokens.delete(token);
      return undefined;
    }
    e.lastUsedMs = nowMs;
    return e.user;
  }

  /** `sweep`, unless one ran less than AUTH_TOKEN_SWEEP_INTERVAL_MS ago. */
  sweepIfDue(nowMs: number): void {
    if (nowMs - this.lastSweepMs >= AUTH_TOKEN_SWEEP_INTERVAL_MS) this.sweep(nowMs);
  }

  /** Drop expired tokens; start the clock of tokens not seen yet. */
  sweep(nowMs: number): void {
    this.lastSweepMs = nowMs;
    for (const [token, e] of this.tokens) {
      if (Number.isNaN(e.lastUsedMs)) e.lastUsedMs = nowMs;
      else if (e.lastUsedMs + this.ttlMs <= nowMs) this.tokens.delete(token);
    }
  }

  dropUser(user: string): void {
    for (const [token, e] of this.tokens) if (e.user === user) this.tokens.delete(token);
  }

  dropAll(): void {
    this.tokens.clear();
  }
}

/** The raft index a well-formed simple token names, or null (etcd: `invalid auth token`). */
export function tokenIndex(token: string): number | null {
  const dot = token.lastIndexOf('.');
  if (dot <= 0 || dot === token.length - 1) return null;
  const digits = token.slice(dot + 1);
  if (!/^[0-9]{1,15}$/.test(digits)) return null;
  return Number(digits);
}
