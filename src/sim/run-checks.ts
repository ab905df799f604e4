// What a run is judged by at its end (and, for write deadlines, as it goes): the simulator's own
// records — the event record, the clients' histories — handed to the checkers of src/check, and
// the few properties only the simulator can see (whether a refused write took effect, whether a
// leader started a write its asker had given up on, whether a key outlived its lease).
import { CLOCK_RATE_ERROR_MAX } from '../core/base/clock-drift.js';
import type { NodeId } from '../core/base/units.js';
import type { Command } from '../core/state/command.js';
import type { EtcdMachine } from '../core/state/etcd-machine.js';
import type { KvOperation } from '../check/history.js';
import { checkLeaseContract, type LeaseLoss } from '../check/lease-contract.js';
import { checkKv } from '../check/linearizability.js';
import { checkLockExclusion, type LockHold } from '../check/lock-exclusion.js';
import { checkWatchDelivery, type WatcherHistory } from '../check/watch-delivery.js';
import { decodeEtcdEntry } from '../replica/member/server-machine.js';
import type { EventReference } from './event-reference.js';
import { InvariantViolation, type InvariantName } from './invariants.js';
import { KV, text as kvText } from './kv-requests.js';
import type { KvWorkload } from './kv-workload.js';
import { LEASE_MARKER_PREFIX, leaseMarkerKey, type LeaseRecord } from './lease-session.js';
import { LOCK, type RecordedHold } from './lock-workload.js';
import type { SimNode } from './sim-node.js';

/** The linearizability search's time budget for one run's history, in ms. */
const LINEARIZABILITY_BUDGET_MS = 20_000;

const text = new TextDecoder();

function violated(
  invariant: InvariantName,
  r: { ok: boolean; violations: readonly { message: string }[] },
): void {
  if (r.ok) return;
  throw new InvariantViolation(
    invariant,
    `${r.violations.length} violations; first: ${r.violations[0]?.message ?? ''}`,
  );
}

/**
 * Per written value: the true time at which the member that took the write from its client gives
 * up on it (its request timeout, on its clock). No leader may start the write later — checked
 * while clocks keep the bound, since the deadline travels on the leader's clock.
 */
export class WriteDeadlines {
  private readonly deadlines = new Map<string, { node: NodeId; atMs: number }>();

  constructor(private readonly requestTimeoutMs: number) {}

  /** A write reached member `n` from its client at true time `nowMs`. */
  note(n: SimNode, path: string, request: unknown, nowMs: number): void {
    const values = writtenValues(path, request);
    if (values.length === 0) return;
    const atMs = n.trueTimeOf(n.localNow(nowMs) + this.requestTimeoutMs);
    for (const v of values) {
      const prev = this.deadlines.get(v);
      if (prev === undefined || atMs < prev.atMs) this.deadlines.set(v, { node: n.id, atMs });
    }
  }

  /** `leader` started a proposal at true time `nowMs`: never a write its asker gave up on. */
  checkProposal(leader: NodeId, data: Uint8Array, nowMs: number): void {
    const cmd = decodeEtcdEntry(data);
    if (cmd === null) return;
    for (const v of commandValues(cmd)) {
      const d = this.deadlines.get(v);
      if (d !== undefined && nowMs > d.atMs)
        throw new InvariantViolation(
          'forward-deadline',
          `member ${leader} proposed the write of ${v} at ${nowMs.toFixed(1)}, after member ${d.node}, which took it from its client, gave up on it at ${d.atMs.toFixed(1)}`,
        );
    }
  }
}

/** The values a KV write request puts (the workload's values are unique per write). */
function writtenValues(path: string, request: unknown): string[] {
  const r = request as Record<string, unknown>;
  // An empty value (an ignore_value put) is not one write's own: it says nothing of which.
  const value = (x: unknown): string[] =>
    x instanceof Uint8Array && x.length > 0 ? [text.decode(x)] : [];
  if (path === KV.put) return value(r['value']);
  if (path !== KV.txn) return [];
  const out: string[] = [];
  for (const branch of ['success', 'failure'] as const) {
    const ops = r[branch];
    if (!Array.isArray(ops)) continue;
    for (const op of ops as Record<string, unknown>[]) {
      const put = op['request_put'] as Record<string, unknown> | undefined;
      if (put) out.push(...value(put['value']));
    }
  }
  return out;
}

/** The values a command puts. */
function commandValues(cmd: Command): string[] {
  if (cmd.type === 'put') return [text.decode(cmd.request.value)];
  if (cmd.type !== 'txn') return [];
  const out: string[] = [];
  for (const op of [...cmd.request.success, ...cmd.request.failure])
    if (op.type === 'put') out.push(text.decode(op.request.value));
  return out;
}

/** Every acknowledged write is in the committed history; no definitely failed one is. */
export function checkDurability(kv: KvWorkload, reference: EventReference): void {
  for (const v of kv.acked) {
    if (!reference.putValues.has(v))
      throw new InvariantViolation('durability', `acknowledged write of ${v} was never applied`);
  }
  for (const [v, why] of kv.refused) {
    if (reference.putValues.has(v))
      throw new InvariantViolation(
        'definite-failure',
        `the write of ${v} was answered '${why}' (nothing done) but took effect`,
      );
  }
}

export function checkLinearizability(history: readonly KvOperation[]): void {
  const lin = checkKv(history, { timeoutMs: LINEARIZABILITY_BUDGET_MS });
  if (lin.verdict !== 'illegal') return;
  const key = lin.illegalKey !== undefined ? ` (key ${lin.illegalKey})` : '';
  throw new InvariantViolation(
    'linearizability',
    `history of ${history.length} ops is not linearizable${key}${lin.detail ? `: ${lin.detail}` : ''}`,
  );
}

/** No key outlives its lease: a revoke deletes every key attached to the lease. */
export function checkLeaseKeys(m: EtcdMachine | undefined): void {
  if (!m) return;
  const all = m.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) });
  if (!('kvs' in all)) return;
  for (const kv of all.kvs) {
    if (kv.lease !== 0n && m.leaseInfo(kv.lease) === undefined)
      throw new InvariantViolation(
        'lease-keys',
        `key ${text.decode(kv.key)} is still attached to lease ${kv.lease}, which is gone`,
      );
  }
}

export function checkWatches(watchers: readonly WatcherHistory[], reference: EventReference): void {
  const events = reference
    .events()
    .map((e) => ({ revision: e.revision, key: e.key, type: e.type }));
  violated('watch-delivery', checkWatchDelivery(watchers, events));
}

/** The lease contract: a lease is lost when its marker key is deleted (only a revoke does that). */
export function checkLeases(reference: EventReference, record: LeaseRecord): number {
  const losses: LeaseLoss[] = reference.deletions(LEASE_MARKER_PREFIX).map((d) => ({
    lease: d.key.slice(LEASE_MARKER_PREFIX.length),
    atMs: d.atMs,
    evidence: `its marker key deleted at revision ${d.revision}`,
  }));
  const r = checkLeaseContract(
    { renewals: record.renewals, losses, revocations: record.revocations },
    { driftRatio: CLOCK_RATE_ERROR_MAX },
  );
  violated('lease-contract', r);
  return r.renewalsChecked;
}

/**
 * When each Unlock reached a member's handler, by lock key (true time). etcd's Unlock names only
 * the key, so what a member can promise is relative to when the request reached it: an Unlock
 * delivered only after its client gave up and locked again with the same lease (it sat in the
 * socket of a stopped member, say) is indistinguishable from a fresh one (src/server/api/lock.ts).
 */
export class UnlockArrivals {
  private readonly arrivals = new Map<string, number[]>();

  note(path: string, request: unknown, nowMs: number): void {
    if (path !== LOCK.unlock) return;
    const key = kvText((request as { key?: unknown }).key);
    const at = this.arrivals.get(key);
    if (at) at.push(nowMs);
    else this.arrivals.set(key, [nowMs]);
  }

  /** An Unlock of `key` reached a member in [fromMs, toMs]. */
  reachedBetween(key: string, fromMs: number, toMs: number): boolean {
    return (this.arrivals.get(key) ?? []).some((t) => t >= fromMs && t <= toMs);
  }
}

/** Lock and election exclusion, then every held key's fate. */
export function checkLocks(
  recorded: readonly RecordedHold[],
  reference: EventReference,
  record: LeaseRecord,
  unlocks: UnlockArrivals,
): number {
  const holds: LockHold[] = recorded.map((h) => ({
    lock: h.lock,
    client: h.client,
    lease: h.lease,
    token: h.rev ?? reference.createRevisionAt(h.key, h.revision),
    requestedMs: h.requestedMs,
    acquiredMs: h.acquiredMs,
    releasedMs: h.releasedMs,
    effects: h.effects,
  }));
  violated(
    'lock-exclusion',
    checkLockExclusion(holds, record.renewals, { driftRatio: CLOCK_RATE_ERROR_MAX }),
  );
  holds.forEach((h, i) => checkHeldKey(h, (recorded[i] as RecordedHold).key, reference, unlocks));
  return holds.length;
}

/**
 * While a client holds, its key goes only with its lease (a revoke, which deletes the lease's
 * marker key in the same revision) or after it let go (its Unlock or Resign). Anything else — a
 * late Unlock of an earlier hold with the same key name — took the lock from a live holder,
 * whether or not another client was waiting to notice. The one exception is an Unlock that
 * reached its member only after this hold was asked for: no member can tell it from a new one.
 * (So a member that fenced an Unlock later than its arrival is caught when the Unlock reached it
 * before the client asked again, not in the short span between asking and being granted.)
 */
function checkHeldKey(
  h: LockHold,
  key: string,
  reference: EventReference,
  unlocks: UnlockArrivals,
): void {
  if (h.token <= 0) return;
  const deletion = reference.deletions(key).find((d) => d.key === key && d.revision > h.token);
  if (deletion === undefined || deletion.atMs >= h.releasedMs) return;
  if (unlocks.reachedBetween(key, h.requestedMs, deletion.atMs)) return;
  const marker = leaseMarkerKey(h.lease);
  const revoked = reference
    .deletions(marker)
    .some((d) => d.key === marker && d.revision === deletion.revision);
  if (revoked) return;
  throw new InvariantViolation(
    'lock-exclusion',
    `the key ${key} of client ${h.client} (token ${h.token}) was deleted at revision ${deletion.revision} (${deletion.atMs.toFixed(1)}) while it held it (until ${h.releasedMs.toFixed(1)}), by neither its release nor its lease's end`,
  );
}
