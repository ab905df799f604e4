// The SDK's pure parts of the lock and election recipes: the queue's key layout for string names,
// fencing-token order, and the SDK's own decisions (lock-delay, hand-off yield, observed leader)
// as functions of data, so that they are table- and property-tested beside the I/O.
//
// Key layout: the one of etcd's client/v3/concurrency (src/core/queue/layout.ts, shared with the
// server's v3lock/v3election services): contenders of `name` are `name + "/" + hex(leaseId)`,
// so Go's concurrency.Mutex/Election, `etcdctl lock|elect` and the services share one FIFO queue.
// Names are UTF-8, as every key the client sends.
//
// Our own bookkeeping keys (the clean-release marker and the hand-off hint) must lie OUTSIDE that
// prefix, or every other client would take them for contenders; they are `name + suffix` with a
// suffix that starts with a character other than "/".
import * as layout from '../core/queue/layout.js';
import type { KeyValue } from './codec.js';

import type { PredecessorGone } from '../core/queue/turn.js';

export type { PredecessorGone };

function prefixBytes(name: string): Uint8Array {
  if (name.length === 0) throw new RangeError('recipe: name must not be empty');
  return layout.queuePrefix(Buffer.from(name));
}

/** The queue prefix of a lock or election: `name + "/"` (Go stores `pfx + "/"`). */
export function queuePrefix(name: string): string {
  return Buffer.from(prefixBytes(name)).toString();
}

/** A contender's key: `name/<lease id in lowercase hex>`, as etcd's Go recipes write it. */
export function contenderKey(name: string, leaseId: bigint): string {
  if (leaseId <= 0n) throw new RangeError(`recipe: lease id must be > 0 (got ${leaseId})`);
  return Buffer.from(layout.waiterKey(prefixBytes(name), leaseId)).toString();
}

/** The lease id encoded in a contender key, or undefined when the key is not one. */
export function leaseOfContenderKey(name: string, key: string): bigint | undefined {
  const pfx = queuePrefix(name);
  if (!key.startsWith(pfx)) return undefined;
  const hex = key.slice(pfx.length);
  if (!/^[0-9a-f]+$/.test(hex)) return undefined;
  return BigInt(`0x${hex}`);
}

/** Suffix of the clean-release marker key (the lock-delay protocol, lockDelayMsFor below). */
export const releaseMarkerSuffix = '.released';
/** Suffix of the hand-off hint key (leader-elector.ts documents the protocol). */
export const handOffHintSuffix = '.handoff';
/** Suffix of the last-leader record (elector-etcd.ts: what the next term's `previous` is). */
export const lastLeaderSuffix = '.last';

/** The one clean-release marker key of a lock: outside the queue prefix. */
export function releaseMarkerKey(name: string): string {
  return `${name}${releaseMarkerSuffix}`;
}

/** The one hand-off hint key of an election: outside the queue prefix. */
export function handOffHintKey(name: string): string {
  return `${name}${handOffHintSuffix}`;
}

/** The one last-leader record of an election: outside the queue prefix, no lease. */
export function lastLeaderKey(name: string): string {
  return `${name}${lastLeaderSuffix}`;
}

/**
 * The last leader that STARTED a term (after its fencePrevious succeeded), as stored (JSON): its
 * election value as UTF-8 text (LeaderElector's values are identities) and its token in decimal.
 */
export interface LastLeaderRecord {
  readonly value: Buffer;
  readonly token: bigint;
}

export function encodeLastLeader(r: LastLeaderRecord): string {
  return JSON.stringify({ value: r.value.toString(), token: r.token.toString() });
}

export function decodeLastLeader(value: Buffer): LastLeaderRecord | undefined {
  try {
    const v = JSON.parse(value.toString()) as unknown;
    if (typeof v !== 'object' || v === null) return undefined;
    const { value: text, token } = v as Record<string, unknown>;
    if (typeof text !== 'string' || typeof token !== 'string' || !/^[0-9]+$/.test(token)) {
      return undefined;
    }
    return { value: Buffer.from(text), token: BigInt(token) };
  } catch {
    return undefined;
  }
}

/**
 * Fencing tokens are create revisions: a later holder of the same name always has a larger one,
 * because its key was created after the earlier holder's key (the queue is FIFO by creation, and
 * a holder's key is the first-created under the prefix). A resource accepts a token only if it is
 * at least the largest it has seen (the fence's rule, src/core/base/fencing-rule.ts).
 */
export { admits as tokenAdmits } from '../core/base/fencing-rule.js';

/**
 * The lock-delay decision (Chubby §2.4, done client-side), from the marker read after the
 * predecessor's deletion. A holder that releases writes, in the same Txn as its delete, the marker
 * `name.released` = its token in decimal. So the marker holding exactly the deleted key's token
 * proves a clean release; anything else (no marker, another token: a crash, a lease expiry, a
 * revoke, an operator's delete, or a foreign client such as etcdctl) gets the delay. Returns the
 * delay to wait, in ms.
 */
export function lockDelayMsFor(
  lockDelayMs: number,
  gone: PredecessorGone | undefined,
  marker: KeyValue | undefined,
): number {
  if (lockDelayMs <= 0 || gone === undefined) return 0;
  const clean = marker !== undefined && marker.value.toString() === gone.token.toString();
  return clean ? 0 : lockDelayMs;
}

/** A hand-off hint as stored (JSON): the chosen successor and the token of the leader that chose. */
export interface HandOffHint {
  readonly to: string;
  readonly fromToken: string;
}

export function encodeHandOffHint(hint: HandOffHint): string {
  return JSON.stringify(hint);
}

export function decodeHandOffHint(value: Buffer): HandOffHint | undefined {
  try {
    const v = JSON.parse(value.toString()) as unknown;
    if (typeof v !== 'object' || v === null) return undefined;
    const { to, fromToken } = v as Record<string, unknown>;
    if (typeof to !== 'string' || typeof fromToken !== 'string') return undefined;
    return { to, fromToken };
  } catch {
    return undefined;
  }
}

/**
 * Whether a campaigner that has reached the head of the queue must step back for a chosen
 * successor: there is a hint naming someone else, that someone is a live contender now (its key
 * exists under the prefix, so its lease is alive), and this campaigner has not already yielded to
 * this very hint (each hint makes each campaigner yield at most once, so a hint can never stall
 * the election for longer than one round of re-queuing).
 */
export function mustYield(
  self: string,
  hint: { readonly hint: HandOffHint; readonly modRevision: bigint } | undefined,
  contenders: readonly KeyValue[],
  yieldedTo: ReadonlySet<bigint>,
): boolean {
  if (hint === undefined || hint.hint.to === self) return false;
  if (yieldedTo.has(hint.modRevision)) return false;
  return contenders.some((kv) => kv.value.toString() === hint.hint.to);
}

/** The leader of an election: the first-created contender, or null. */
export function leaderOf(contenders: Iterable<KeyValue>): KeyValue | null {
  let best: KeyValue | null = null;
  for (const kv of contenders)
    if (best === null || kv.createRevision < best.createRevision) best = kv;
  return best;
}

/**
 * Whether an observer must report `next` after having reported `last`: a different leader (by
 * token, so a new term with an identical value counts), a new value or proclamation by the same
 * leader (mod revision), or a change between "no leader" and a leader.
 */
export function leaderChanged(
  last: { readonly token: bigint; readonly modRevision: bigint } | null | undefined,
  next: { readonly token: bigint; readonly modRevision: bigint } | null,
): boolean {
  if (last === undefined) return true;
  if (last === null || next === null) return last !== next;
  return last.token !== next.token || last.modRevision !== next.modRevision;
}
