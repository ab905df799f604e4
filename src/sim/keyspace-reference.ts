// A second, naive etcd key space, written from etcd 3.4's documented behaviour and apart from
// src/core/state, so that a mistake there is not copied here. The simulator feeds it the
// committed log, entry by entry, and compares every member's answer to each entry with its own
// (keyspace-check.ts). It is built to be obviously right rather than fast: every key keeps its
// whole version list, and every read walks it.
//
// Semantics (etcd 3.4: server/etcdserver/apply.go, mvcc/kvstore_txn.go, lease/lessor.go):
// - one revision per write request, shared by all its changes; a request that changes nothing
//   (a delete of nothing, a txn whose ops write nothing) makes no revision;
// - Range: revision ≤ 0 reads the newest state, one below the compaction revision is compacted,
//   one above the newest is in the future; `count` counts the keys in the range before the
//   min/max filters and the limit; filters, then sort, then limit (`more` when it cut), then
//   keys_only; a sort target other than KEY with order NONE sorts ascending;
// - a read inside a txn sees the txn's earlier writes;
// - a compare over a range holds when every key in it satisfies it; over no key, a VALUE compare
//   fails and the others compare a zero key-value;
// - Put with ignore_value or ignore_lease needs the key to exist; a lease must exist to attach;
// - a lease revoke deletes its keys in key order, in one revision; a revoke the leader proposed
//   because its clock said the lease expired does nothing if the deadline has since moved past
//   that reading.
//
// What it cannot decide it takes from the machine it checks: the ID a lease grant chooses when
// the request leaves it to the server (it must be new), and the refusals in MIRRORED.
import { CLOCK_RATE_ERROR_MAX } from '../core/base/clock-drift.js';
import type { Revision } from '../core/base/units.js';
import type { Command } from '../core/state/command.js';
import type { EtcdLimits } from '../core/state/etcd-limits.js';
import type { EtcdResult } from '../core/state/etcd-machine.js';
import type {
  Compare,
  DeleteRangeRequest,
  KeyValue,
  LeaseId,
  PutRequest,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  TxnRequest,
} from '../core/state/kv-types.js';

/** etcd's texts for the errors this model decides (etcdserver/api/v3rpc/rpctypes). */
export const REFERENCE_ERRORS = {
  emptyKey: 'etcdserver: key is not provided',
  keyNotFound: 'etcdserver: key not found',
  valueProvided: 'etcdserver: value is provided',
  leaseProvided: 'etcdserver: lease is provided',
  tooManyOps: 'etcdserver: too many operations in txn request',
  compacted: 'etcdserver: mvcc: required revision has been compacted',
  futureRev: 'etcdserver: mvcc: required revision is a future revision',
  leaseNotFound: 'etcdserver: requested lease not found',
  leaseExists: 'etcdserver: lease already exists',
  ttlTooLarge: 'etcdserver: too large lease TTL',
} as const;

/**
 * Refusals this model takes from the machine instead of deciding them: the space quota (it
 * counts bytes of the store's own layout), and duplicate keys in a txn, which etcd checks in its
 * API layer (v3rpc/key.go, checkIntervals), never in apply, so a txn in the log must apply.
 */
const MIRRORED: ReadonlySet<string> = new Set([
  'etcdserver: mvcc: database space exceeded',
  'etcdserver: duplicate key given in txn request',
]);

/** What one answer is, in a form two implementations can be compared by. */
export type ReferenceAnswer =
  | { readonly kind: 'skip' }
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'ok'; readonly answer: unknown };

/** One change a write made, as a watcher sees it. */
export interface ReferenceEvent {
  readonly key: string;
  readonly type: 'put' | 'delete';
  readonly value: string;
  readonly createRevision: number;
  readonly lease: string;
}

interface Version {
  readonly rev: number;
  /** null: the key was deleted at `rev`. */
  readonly value: Uint8Array | null;
  readonly create: number;
  readonly version: number;
  readonly lease: LeaseId;
}

interface RefLease {
  readonly ttlSeconds: number;
  deadlineMs: number;
  checkpointSeconds: number | null;
  readonly keys: Set<string>;
}

/** The path a txn takes: whether its compares held, and the same for each nested txn on it. */
interface Plan {
  readonly ok: boolean;
  readonly nested: readonly Plan[];
}

class Refused extends Error {
  constructor(readonly text: string) {
    super(text);
  }
}

const MS_PER_SECOND = 1000;
const latin1 = (b: Uint8Array): string => Buffer.from(b).toString('latin1');
const bytesOf = (k: string): Uint8Array => new Uint8Array(Buffer.from(k, 'latin1'));
const utf8 = new TextDecoder();

/** The keys a request's [key, rangeEnd) covers, as etcd reads range_end. */
function inRange(k: string, key: string, rangeEnd: Uint8Array | undefined): boolean {
  if (rangeEnd === undefined || rangeEnd.length === 0) return k === key;
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return k >= key;
  return k >= key && k < latin1(rangeEnd);
}

export class KeyspaceReference {
  private readonly keys = new Map<string, Version[]>();
  private readonly leases = new Map<LeaseId, RefLease>();
  private rev = 1;
  private compactRev = 0;
  /**
   * The write in progress: the revision it writes at, whether it has changed anything yet, its
   * events, and how to take its changes back should it fail part way (etcd never does: it
   * checks first, so a failure here after a change is reported as this model's own fault).
   */
  private writing:
    { rev: number; changed: boolean; events: ReferenceEvent[]; undo: (() => void)[] } | undefined;
  /** The events of every revision, for the watch record's check. */
  readonly events = new Map<number, readonly ReferenceEvent[]>();

  constructor(private readonly limits: EtcdLimits) {}

  get revision(): number {
    return this.rev;
  }

  /** Every live key-value now, in key order. */
  latest(): KeyValue[] {
    const from = new Uint8Array([0]);
    return this.live(from, from, this.rev);
  }

  /**
   * Apply `cmd` (index `index` of the log) and say what etcd answers. `machine` is the checked
   * machine's answer, consulted only for what this model cannot decide (see the header).
   */
  apply(cmd: Command, machine: EtcdResult): ReferenceAnswer {
    if (machine.type === 'error' && MIRRORED.has(machine.error.message)) return { kind: 'skip' };
    // Auth and alarms are not modelled: the simulator's clients never enable auth or raise an
    // alarm, so no check or refusal ever fires.
    if (cmd.type === 'auth' || cmd.type === 'authenticate' || cmd.type === 'alarm')
      return { kind: 'skip' };
    try {
      return { kind: 'ok', answer: this.execute(cmd, machine) };
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      const w = this.writing;
      this.writing = undefined;
      if (w?.changed) {
        for (const u of w.undo.reverse()) u();
        return { kind: 'error', message: `the reference failed after a change: ${e.text}` };
      }
      return { kind: 'error', message: e.text };
    }
  }

  private execute(cmd: Command, machine: EtcdResult): unknown {
    switch (cmd.type) {
      case 'put':
        return this.write(
          () => this.validatePut(cmd.request),
          () => this.put(cmd.request),
        );
      case 'deleteRange':
        return this.write(
          () => this.validateKey(cmd.request.key),
          () => this.deleteRange(cmd.request),
        );
      case 'txn':
        return this.write(
          () => this.validateTxn(cmd.request),
          () => this.txn(cmd.request),
        );
      case 'compact': {
        if (cmd.request.revision <= this.compactRev) throw new Refused(REFERENCE_ERRORS.compacted);
        if (cmd.request.revision > this.rev) throw new Refused(REFERENCE_ERRORS.futureRev);
        this.compact(cmd.request.revision);
        return { header: this.rev };
      }
      case 'leaseGrant':
        return this.leaseGrant(cmd.id, cmd.ttlSeconds, cmd.nowMs, machine);
      case 'leaseRevoke': {
        const lease = this.leases.get(cmd.id);
        if (lease === undefined) throw new Refused(REFERENCE_ERRORS.leaseNotFound);
        if (cmd.ifExpiredAtMs !== undefined && lease.deadlineMs > cmd.ifExpiredAtMs)
          return { header: this.rev };
        return this.write(
          () => undefined,
          () => {
            this.leases.delete(cmd.id);
            for (const k of [...lease.keys].sort()) this.remove(k);
            return {};
          },
        );
      }
      case 'leaseKeepAlive': {
        const lease = this.leases.get(cmd.id);
        if (lease === undefined || lease.deadlineMs <= cmd.nowMs)
          return { header: this.rev, id: String(cmd.id), ttl: 0 };
        lease.deadlineMs = cmd.nowMs + lease.ttlSeconds * MS_PER_SECOND;
        lease.checkpointSeconds = null;
        return { header: this.rev, id: String(cmd.id), ttl: lease.ttlSeconds };
      }
      case 'leaseCheckpoint':
        for (const c of cmd.checkpoints) {
          const lease = this.leases.get(c.id);
          if (!lease) continue;
          // null: the reset a leader commits before it answers a checkpointed lease's renewal.
          const r = c.remainingTtlSeconds;
          lease.checkpointSeconds = r === null ? null : Math.max(0, Math.min(r, lease.ttlSeconds));
        }
        return { header: this.rev };
      case 'leaseRefreshAll':
        for (const lease of this.leases.values()) {
          // A checkpointed remainder, stretched by twice the clock rate bound, or the full TTL
          // plus the extra time, whichever is less; the refresh consumes the checkpoint.
          const fullMs = lease.ttlSeconds * MS_PER_SECOND + cmd.extraMs;
          const cp = lease.checkpointSeconds;
          const lifeMs =
            cp === null
              ? fullMs
              : Math.min(fullMs, cp * MS_PER_SECOND * (1 + 2 * CLOCK_RATE_ERROR_MAX));
          lease.deadlineMs = cmd.nowMs + lifeMs;
          lease.checkpointSeconds = null;
        }
        return { header: this.rev };
      case 'auth':
      case 'authenticate':
      case 'alarm':
        return {}; // never reached: apply skips them
    }
  }

  /** Validate, then run `body` as one write: one revision if it changed anything. */
  private write(validate: () => void, body: () => object): unknown {
    validate();
    this.writing = { rev: this.rev + 1, changed: false, events: [], undo: [] };
    const out = body();
    const w = this.writing;
    this.writing = undefined;
    if (w.changed) {
      this.rev = w.rev;
      this.events.set(w.rev, w.events);
    }
    return { header: this.rev, ...out };
  }

  // ---- Reading ----

  /** The revision reads see now: inside a write that changed something, its own revision. */
  private viewRev(): number {
    return this.writing?.changed ? this.writing.rev : this.rev;
  }

  private at(k: string, rev: number): Version | undefined {
    const vs = this.keys.get(k);
    if (!vs) return undefined;
    for (let i = vs.length - 1; i >= 0; i--) {
      const v = vs[i] as Version;
      if (v.rev <= rev) return v.value === null ? undefined : v;
    }
    return undefined;
  }

  private kv(k: string, v: Version): KeyValue {
    return {
      key: bytesOf(k),
      createRevision: v.create as Revision,
      modRevision: v.rev as Revision,
      version: v.version,
      value: v.value ?? new Uint8Array(0),
      lease: v.lease,
    };
  }

  /** Live keys of [key, rangeEnd) at `rev`, in key order. */
  private live(key: Uint8Array, rangeEnd: Uint8Array | undefined, rev: number): KeyValue[] {
    const start = latin1(key);
    if (rangeEnd === undefined || rangeEnd.length === 0) {
      const v = this.at(start, rev);
      return v ? [this.kv(start, v)] : [];
    }
    const out: KeyValue[] = [];
    const keys = this.sortedKeys();
    // The first key at or after `start`, by bisection; then on until past the range.
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((keys[mid] as string) < start) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < keys.length; i++) {
      const k = keys[i] as string;
      if (!inRange(k, start, rangeEnd)) break;
      const v = this.at(k, rev);
      if (v) out.push(this.kv(k, v));
    }
    return out;
  }

  /** Every key with history, in byte order (latin1 strings order as their bytes do). */
  private sorted: string[] | undefined;
  private sortedKeys(): readonly string[] {
    this.sorted ??= [...this.keys.keys()].sort();
    return this.sorted;
  }

  private range(r: RangeRequest): Omit<RangeResponse, 'header'> & { header: number } {
    this.validateKey(r.key);
    const view = this.viewRev();
    const rev = r.revision !== undefined && r.revision > 0 ? r.revision : view;
    if (rev > view) throw new Refused(REFERENCE_ERRORS.futureRev);
    if (rev < this.compactRev) throw new Refused(REFERENCE_ERRORS.compacted);
    const all = this.live(r.key, r.rangeEnd, rev);
    if (r.countOnly) return { header: rev, kvs: [], more: false, count: all.length };
    let kvs = all.filter(
      (kv) =>
        (!r.minModRevision || kv.modRevision >= r.minModRevision) &&
        (!r.maxModRevision || kv.modRevision <= r.maxModRevision) &&
        (!r.minCreateRevision || kv.createRevision >= r.minCreateRevision) &&
        (!r.maxCreateRevision || kv.createRevision <= r.maxCreateRevision),
    );
    const target = r.sortTarget ?? 'KEY';
    const order = (r.sortOrder ?? 'NONE') === 'NONE' && target !== 'KEY' ? 'ASCEND' : r.sortOrder;
    if (order === 'ASCEND' || order === 'DESCEND') {
      const sign = order === 'ASCEND' ? 1 : -1;
      kvs = [...kvs].sort((a, b) => sign * compareField(a, b, target));
    }
    const limit = r.limit ?? 0;
    const more = limit > 0 && kvs.length > limit;
    if (more) kvs = kvs.slice(0, limit);
    if (r.keysOnly) kvs = kvs.map((kv) => ({ ...kv, value: new Uint8Array(0) }));
    return { header: rev, kvs, more, count: all.length };
  }

  // ---- Writing ----

  private change(k: string, v: Version, event: ReferenceEvent): void {
    const w = this.writing;
    if (!w) throw new Error('keyspace reference: a change outside a write');
    w.changed = true;
    const vs = this.keys.get(k) ?? [];
    if (vs.length === 0) this.sorted = undefined;
    vs.push(v);
    this.keys.set(k, vs);
    w.events.push(event);
    w.undo.push(() => {
      vs.pop();
      if (vs.length === 0) {
        this.keys.delete(k);
        this.sorted = undefined;
      }
    });
  }

  /** Attach or detach `k` to lease `id`, as part of the write in progress. */
  private attach(id: LeaseId, k: string, on: boolean): void {
    const keys = this.leases.get(id)?.keys;
    if (!keys || keys.has(k) === on) return;
    if (on) keys.add(k);
    else keys.delete(k);
    this.writing?.undo.push(() => (on ? keys.delete(k) : keys.add(k)));
  }

  private put(p: PutRequest): object {
    const k = latin1(p.key);
    const prev = this.at(k, this.viewRev());
    const value = p.ignoreValue ? (prev?.value ?? new Uint8Array(0)) : p.value;
    const lease = p.ignoreLease ? (prev?.lease ?? 0n) : (p.lease ?? 0n);
    const rev = (this.writing as { rev: number }).rev;
    if (prev && prev.lease !== 0n && prev.lease !== lease) this.attach(prev.lease, k, false);
    if (lease !== 0n) this.attach(lease, k, true);
    const create = prev ? prev.create : rev;
    this.change(
      k,
      { rev, value, create, version: (prev?.version ?? 0) + 1, lease },
      {
        key: k,
        type: 'put',
        value: utf8.decode(value),
        createRevision: create,
        lease: String(lease),
      },
    );
    return p.prevKv && prev ? { prevKv: this.kv(k, prev) } : {};
  }

  /** Delete a live key at the write's revision. */
  private remove(k: string): void {
    const prev = this.at(k, this.viewRev());
    if (!prev) return;
    if (prev.lease !== 0n) this.attach(prev.lease, k, false);
    const rev = (this.writing as { rev: number }).rev;
    this.change(
      k,
      { rev, value: null, create: 0, version: 0, lease: 0n },
      { key: utf8.decode(bytesOf(k)), type: 'delete', value: '', createRevision: 0, lease: '0' },
    );
  }

  private deleteRange(d: DeleteRangeRequest): object {
    const gone = this.live(d.key, d.rangeEnd, this.viewRev());
    for (const kv of gone) this.remove(latin1(kv.key));
    return { deleted: gone.length, prevKvs: d.prevKv ? gone : [] };
  }

  private compare(c: Compare): boolean {
    const kvs = this.live(c.key, c.rangeEnd, this.viewRev());
    if (kvs.length === 0 && c.target === 'VALUE') return false;
    const zero: KeyValue = {
      key: c.key,
      createRevision: 0 as Revision,
      modRevision: 0 as Revision,
      version: 0,
      value: new Uint8Array(0),
      lease: 0n,
    };
    return (kvs.length === 0 ? [zero] : kvs).every((kv) => {
      let cmp: number;
      switch (c.target) {
        case 'VERSION':
          cmp = Math.sign(kv.version - c.version);
          break;
        case 'CREATE':
          cmp = Math.sign(kv.createRevision - c.createRevision);
          break;
        case 'MOD':
          cmp = Math.sign(kv.modRevision - c.modRevision);
          break;
        case 'LEASE':
          cmp = kv.lease < c.lease ? -1 : kv.lease > c.lease ? 1 : 0;
          break;
        case 'VALUE':
          cmp = Buffer.compare(Buffer.from(kv.value), Buffer.from(c.value));
          break;
      }
      switch (c.result) {
        case 'EQUAL':
          return cmp === 0;
        case 'NOT_EQUAL':
          return cmp !== 0;
        case 'GREATER':
          return cmp > 0;
        case 'LESS':
          return cmp < 0;
      }
    });
  }

  /**
   * etcd's compareToPath: every compare of a txn, nested ones included, is decided on the state
   * before the txn changes anything, and the txn then follows that path.
   */
  private plan(t: TxnRequest): Plan {
    const ok = t.compare.every((c) => this.compare(c));
    const nested = (ok ? t.success : t.failure)
      .filter((op) => op.type === 'txn')
      .map((op) => this.plan(op.request));
    return { ok, nested };
  }

  private txn(t: TxnRequest): object {
    const plan = this.plan(t);
    this.precheck(t, plan);
    return this.follow(t, plan);
  }

  private follow(t: TxnRequest, plan: Plan): object {
    let n = 0;
    const responses = (plan.ok ? t.success : t.failure).map((op) =>
      op.type === 'txn' ? { txn: this.follow(op.request, plan.nested[n++] as Plan) } : this.op(op),
    );
    return { succeeded: plan.ok, responses };
  }

  private op(op: RequestOp): unknown {
    switch (op.type) {
      case 'range': {
        // A sub-response's header is left out on both sides: tenure gives each the txn's own
        // header, where etcd 3.4 gives the revision the read saw (a known difference).
        const { header: _seen, ...rest } = this.range(op.request);
        return { range: rest };
      }
      case 'put':
        return { put: this.put(op.request) };
      case 'deleteRange':
        return { deleteRange: this.deleteRange(op.request) };
      case 'txn':
        throw new Error('keyspace reference: a nested txn outside its plan');
      case 'empty':
        throw new Error('keyspace reference: an empty op passed validation');
    }
  }

  /**
   * etcd's checkRequests: before a txn changes anything, the puts of its chosen path must find
   * their lease (and their key, with ignore_*), and its reads at a past revision must find it
   * neither compacted nor later than the store's revision before the txn.
   */
  private precheck(t: TxnRequest, plan: Plan): void {
    let n = 0;
    for (const op of plan.ok ? t.success : t.failure) {
      if (op.type === 'put') this.checkPutTarget(op.request);
      if (op.type === 'range') {
        const rev = op.request.revision ?? 0;
        if (rev > 0 && rev > this.rev) throw new Refused(REFERENCE_ERRORS.futureRev);
        if (rev > 0 && rev < this.compactRev) throw new Refused(REFERENCE_ERRORS.compacted);
      }
      if (op.type === 'txn') this.precheck(op.request, plan.nested[n++] as Plan);
    }
  }

  private checkPutTarget(p: PutRequest): void {
    const prev = this.at(latin1(p.key), this.viewRev());
    if ((p.ignoreValue || p.ignoreLease) && !prev) throw new Refused(REFERENCE_ERRORS.keyNotFound);
    const lease = p.ignoreLease ? (prev?.lease ?? 0n) : (p.lease ?? 0n);
    if (lease !== 0n && !this.leases.has(lease)) throw new Refused(REFERENCE_ERRORS.leaseNotFound);
  }

  private compact(rev: number): void {
    for (const [k, vs] of this.keys) {
      // Keep what reads at `rev` and later need: the newest version at or before it (unless it
      // is a deletion) and everything after.
      let keepFrom = vs.findIndex((v) => v.rev > rev);
      if (keepFrom < 0) keepFrom = vs.length;
      const base = vs[keepFrom - 1];
      const kept = vs.slice(keepFrom);
      if (base && base.value !== null) kept.unshift(base);
      if (kept.length === 0) this.keys.delete(k);
      else this.keys.set(k, kept);
    }
    this.compactRev = rev;
    this.sorted = undefined;
  }

  private leaseGrant(id: LeaseId, ttl: number, nowMs: number, machine: EtcdResult): object {
    if (ttl > this.limits.leaseTtlMaxSeconds) throw new Refused(REFERENCE_ERRORS.ttlTooLarge);
    if (id !== 0n && this.leases.has(id)) throw new Refused(REFERENCE_ERRORS.leaseExists);
    // A server-chosen ID is the machine's to choose; it must be a new one.
    const chosen = id !== 0n ? id : machine.type === 'leaseGrant' ? machine.response.id : 0n;
    if (chosen === 0n || this.leases.has(chosen)) return { chose: 'no new ID' };
    const ttlSeconds = Math.max(Math.trunc(ttl), this.limits.leaseTtlMinSeconds);
    this.leases.set(chosen, {
      ttlSeconds,
      deadlineMs: nowMs + ttlSeconds * MS_PER_SECOND,
      checkpointSeconds: null,
      keys: new Set(),
    });
    return { header: this.rev, id: String(chosen), ttl: ttlSeconds };
  }

  // ---- Validation (etcd's v3rpc checks, which tenure repeats in apply) ----

  private validateKey(key: Uint8Array): void {
    if (key.length === 0) throw new Refused(REFERENCE_ERRORS.emptyKey);
  }

  private validatePut(p: PutRequest): void {
    this.validateKey(p.key);
    if (p.ignoreValue && p.value.length > 0) throw new Refused(REFERENCE_ERRORS.valueProvided);
    if (p.ignoreLease && (p.lease ?? 0n) !== 0n) throw new Refused(REFERENCE_ERRORS.leaseProvided);
    this.checkPutTarget(p);
  }

  private validateTxn(t: TxnRequest): void {
    const max = this.limits.txnOpsMax;
    const walk = (x: TxnRequest): void => {
      if (x.compare.length > max || x.success.length > max || x.failure.length > max)
        throw new Refused(REFERENCE_ERRORS.tooManyOps);
      for (const c of x.compare) this.validateKey(c.key);
      for (const op of [...x.success, ...x.failure]) {
        if (op.type === 'empty') throw new Refused(REFERENCE_ERRORS.emptyKey);
        if (op.type === 'txn') walk(op.request);
        else if (op.type === 'put') {
          this.validateKey(op.request.key);
          if (op.request.ignoreValue && op.request.value.length > 0)
            throw new Refused(REFERENCE_ERRORS.valueProvided);
          if (op.request.ignoreLease && (op.request.lease ?? 0n) !== 0n)
            throw new Refused(REFERENCE_ERRORS.leaseProvided);
        } else this.validateKey(op.request.key);
      }
    };
    walk(t);
  }

  // ---- Comparison form ----

  /** The comparison form of the checked machine's answer. */
  static answerOf(r: EtcdResult): ReferenceAnswer {
    switch (r.type) {
      case 'noop':
        return { kind: 'skip' };
      case 'error':
        return { kind: 'error', message: r.error.message };
      case 'put':
        return {
          kind: 'ok',
          answer: {
            header: r.response.header.revision,
            ...(r.response.prevKv ? { prevKv: r.response.prevKv } : {}),
          },
        };
      case 'deleteRange':
        return {
          kind: 'ok',
          answer: {
            header: r.response.header.revision,
            deleted: r.response.deleted,
            prevKvs: r.response.prevKvs,
          },
        };
      case 'txn':
        return {
          kind: 'ok',
          answer: { header: r.response.header.revision, ...txnBody(r.response) },
        };
      case 'leaseGrant':
      case 'leaseKeepAlive':
        return {
          kind: 'ok',
          answer: {
            header: r.response.header.revision,
            id: String(r.response.id),
            ttl: r.response.ttlSeconds,
          },
        };
      case 'compact':
      case 'leaseRevoke':
      case 'leaseCheckpoint':
      case 'leaseRefreshAll':
        return { kind: 'ok', answer: { header: r.response.header.revision } };
      case 'auth':
      case 'authenticate':
      case 'alarm':
        return { kind: 'skip' };
    }
  }

  /** Canonical text of an answer: equal texts, equal answers. */
  static text(a: ReferenceAnswer): string {
    return canonical(a);
  }
}

/**
 * JSON-like text of an answer, written out by hand (JSON.stringify with a replacer cost a tenth
 * of a seed's time): bytes as hex, bigints as decimals, and a key-value in one field order,
 * whatever order its maker wrote its fields in.
 */
function canonical(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'bigint') return `"${v}"`;
  if (v instanceof Uint8Array)
    return `"b:${Buffer.from(v.buffer, v.byteOffset, v.length).toString('hex')}"`;
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  if ('modRevision' in o) {
    const kv = o as unknown as KeyValue;
    return canonical([kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease]);
  }
  const parts: string[] = [];
  for (const k of Object.keys(o)) if (o[k] !== undefined) parts.push(`"${k}":${canonical(o[k])}`);
  return `{${parts.join(',')}}`;
}

/** A txn response's body, with sub-responses in the reference's shape (their headers left out). */
function txnBody(t: {
  readonly succeeded: boolean;
  readonly responses: readonly ResponseOp[];
}): object {
  return {
    succeeded: t.succeeded,
    responses: t.responses.map((r) => {
      switch (r.type) {
        case 'range':
          return {
            range: {
              kvs: r.response.kvs,
              more: r.response.more,
              count: r.response.count,
            },
          };
        case 'put':
          return { put: r.response.prevKv ? { prevKv: r.response.prevKv } : {} };
        case 'deleteRange':
          return {
            deleteRange: { deleted: r.response.deleted, prevKvs: r.response.prevKvs },
          };
        case 'txn':
          return { txn: txnBody(r.response) };
      }
    }),
  };
}

function compareField(a: KeyValue, b: KeyValue, target: string): number {
  switch (target) {
    case 'VERSION':
      return a.version - b.version;
    case 'CREATE':
      return a.createRevision - b.createRevision;
    case 'MOD':
      return a.modRevision - b.modRevision;
    case 'VALUE':
      return Buffer.compare(Buffer.from(a.value), Buffer.from(b.value));
    default:
      return Buffer.compare(Buffer.from(a.key), Buffer.from(b.key));
  }
}
