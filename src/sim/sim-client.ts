// What every simulated client shares: the channel to the members, time, randomness, and one call
// with the failover rule of tenure's SDK (src/client/connection.ts), as outcome.ts states it:
// reads and renewals go from member to member until the call's time is spent; a write moves on
// only when the member refused the connection, and otherwise ends definite or unknown.
import type { Prng } from '../core/base/prng.js';
import type { NodeId } from '../core/base/units.js';
import type { ApiChannel, CallFailure } from './api-channel.js';
import type { EventQueue } from '../core/base/event-queue.js';
import { readVerdict, writeVerdict } from './outcome.js';

/** Event tag of a client's own timers. */
const TAG_CLIENT_TIMER = 3;
/** Pause after a failed attempt before the next member is tried, in ms. */
const RETRY_PAUSE_MS = { min: 5, max: 30 } as const;

export interface ClientEnv {
  readonly q: EventQueue;
  readonly channel: ApiChannel;
  /** Every member a client may call (a down one refuses the connection). */
  members(): readonly NodeId[];
  /** Clients start nothing new after this (true) time. */
  readonly stopAtMs: number;
}

export type CallResult =
  | { readonly ok: true; readonly response: Record<string, unknown>; readonly node: NodeId }
  /** `definite`: certainly not done; `unknown`: may have been; `gaveUp`: a read that never got through. */
  | {
      readonly ok: false;
      readonly verdict: 'definite' | 'unknown' | 'gaveUp';
      readonly failure: CallFailure;
      /** The member the last attempt went to. */
      readonly node: NodeId | undefined;
    };

/** How many of a workload's client loops are still running (a run ends once none is). */
export class Running {
  private count = 0;

  get idle(): boolean {
    return this.count === 0;
  }

  /** Run one client's loop, counted while it runs. */
  async loop(body: () => Promise<void>): Promise<void> {
    this.count++;
    try {
      await body();
    } finally {
      this.count--;
    }
  }
}

export function sleep(env: ClientEnv, ms: number): Promise<void> {
  return new Promise((resolve) => env.q.after(ms, TAG_CLIENT_TIMER, resolve));
}

export interface CallOptions {
  readonly timeoutMs: number;
  /** One attempt of a read gives up after this long and tries the next member. */
  readonly attemptTimeoutMs: number;
  /** The member to try first (the one that answered last). */
  readonly prefer?: NodeId | undefined;
  /** A member to try last (the one that just failed: the SDK moves on to the next endpoint). */
  readonly avoid?: NodeId | undefined;
  /**
   * An attempt that times out is left open instead of cancelled (a timer of the caller's own, not
   * the call's deadline), so the member goes on serving it after the client has moved on.
   */
  readonly leaveOpen?: boolean;
}

/** One call under the SDK's failover rule. */
export async function call(
  env: ClientEnv,
  prng: Prng,
  path: string,
  request: object,
  write: boolean,
  opts: CallOptions,
): Promise<CallResult> {
  const deadline = env.q.now + opts.timeoutMs;
  const order = rotation(env.members(), prng, opts.prefer, opts.avoid);
  let last: CallFailure = { kind: 'timeout' };
  let lastNode: NodeId | undefined;
  for (let i = 0; env.q.now < deadline; i++) {
    const node = order[i % order.length] as NodeId;
    lastNode = node;
    const remaining = deadline - env.q.now;
    const a = await env.channel.unary(
      node,
      path,
      request,
      write ? remaining : Math.min(remaining, opts.attemptTimeoutMs),
      undefined,
      opts.leaveOpen ?? false,
    );
    if (a.ok) return { ok: true, response: a.response, node };
    last = a.failure;
    if (write) {
      const v = writeVerdict(a.failure);
      if (v !== 'resend') return { ok: false, verdict: v, failure: a.failure, node };
    } else if (readVerdict(a.failure) === 'refusal') {
      return { ok: false, verdict: 'definite', failure: a.failure, node };
    }
    if (i % order.length === order.length - 1 || a.failure.kind !== 'timeout')
      await sleep(env, prng.int(RETRY_PAUSE_MS.min, RETRY_PAUSE_MS.max));
  }
  return { ok: false, verdict: write ? 'unknown' : 'gaveUp', failure: last, node: lastNode };
}

/**
 * The members in the order a client tries them: the preferred one first, the avoided one last,
 * the rest shuffled.
 */
function rotation(
  members: readonly NodeId[],
  prng: Prng,
  prefer: NodeId | undefined,
  avoid: NodeId | undefined,
): NodeId[] {
  const rest = members
    .filter((m) => m !== prefer && m !== avoid)
    .map((m) => ({ m, k: prng.next() }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.m);
  const first =
    prefer !== undefined && prefer !== avoid && members.includes(prefer) ? [prefer] : [];
  const last = avoid !== undefined && members.includes(avoid) ? [avoid] : [];
  return [...first, ...rest, ...last];
}
