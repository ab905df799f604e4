// The etcd v3 key space as a replicated state machine: MVCC store plus lease table, applying
// commands from the Raft log deterministically and returning etcd's responses or its exact errors
// as data. Reads (Range, LeaseTimeToLive, LeaseLeases) are queries on the applied state: the
// replica answers them after ReadIndex (linearizable) or at once (serializable). Watch hubs are
// local to a node and not part of the replicated state; the machine feeds them each revision.
import { NO_MUTANTS, type Mutants } from '../base/mutants.js';
import { assert, unreachable } from '../base/assert.js';
import { FNV_OFFSET, fnvNumber } from '../base/hash.js';
import type { LogIndex, Revision } from '../base/units.js';
import {
  checkDeleteRange,
  checkLeaseKeys,
  checkPut,
  checkTxn,
  type LeaseKeys,
} from './auth-check.js';
import type { AlarmMember, AlarmType } from './alarms.js';
import { AlarmStore } from './alarms.js';
import type { AuthOp } from './auth-ops.js';
import { AuthStore, type AuthAnswer, type AuthAs, type TokenEffect } from './auth-store.js';
import { TokenTable } from './auth-tokens.js';
import type { Command } from './command.js';
import { decodeCommand } from './command.js';
import type { EtcdError } from './etcd-errors.js';
import {
  ERR_AUTH_FAILED,
  ERR_AUTH_NOT_ENABLED,
  ERR_COMPACTED,
  ERR_CORRUPT,
  ERR_FUTURE_REV,
  ERR_LEASE_EXIST,
  ERR_LEASE_NOT_FOUND,
  ERR_LEASE_TTL_TOO_LARGE,
  ERR_NO_SPACE,
} from './etcd-errors.js';
import type { EtcdLimits } from './etcd-limits.js';
import { DEFAULT_ETCD_LIMITS } from './etcd-limits.js';
import type { KeySpan } from './key-range.js';
import { fromByteKey } from './key-range.js';
import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  LeaseGrantResponse,
  LeaseId,
  LeaseKeepAliveResponse,
  LeaseLeasesResponse,
  LeaseRevokeResponse,
  LeaseTimeToLiveResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  ResponseHeader,
  TxnRequest,
  TxnResponse,
  WatchEvent,
} from './kv-types.js';
import type { KvState } from './kv-write.js';
import {
  deleteKey,
  executeDeleteRange,
  executePut,
  precheckPut,
  validateDeleteRange,
  validatePut,
} from './kv-write.js';
import { LEASE_ID_MAX, LEASE_ID_MIN, LeaseTable, type LeaseView } from './lease-table.js';
import type { StateMachine } from './machine.js';
import { MvccStore, type KvHashJob } from './mvcc.js';
import { range } from './range-query.js';
import {
  checkDuplicates,
  isReadOnlyTxn,
  executeTxn,
  precheckTxn,
  txnPath,
  validateTxn,
  withTxnHeader,
} from './txn.js';
import { decodeSnapshotData, encodeSnapshotData } from './snapshot-codec.js';
import type { WatchSource } from './watch-hub.js';
import { WatchHub } from './watch-hub.js';

/** The result of applying one log entry. */
export type EtcdResult =
  | { readonly type: 'noop' }
  | { readonly type: 'put'; readonly response: PutResponse }
  | { readonly type: 'deleteRange'; readonly response: DeleteRangeResponse }
  | { readonly type: 'txn'; readonly response: TxnResponse }
  | { readonly type: 'compact'; readonly response: CompactionResponse }
  | { readonly type: 'leaseGrant'; readonly response: LeaseGrantResponse }
  | { readonly type: 'leaseRevoke'; readonly response: LeaseRevokeResponse }
  | { readonly type: 'leaseKeepAlive'; readonly response: LeaseKeepAliveResponse }
  | { readonly type: 'leaseCheckpoint'; readonly response: { readonly header: ResponseHeader } }
  | { readonly type: 'leaseRefreshAll'; readonly response: { readonly header: ResponseHeader } }
  | { readonly type: 'auth'; readonly response: AuthAnswer & { readonly header: ResponseHeader } }
  /** `token` null: the auth revision moved since the password check; check and propose again. */
  | {
      readonly type: 'authenticate';
      readonly response: { readonly header: ResponseHeader; readonly token: string | null };
    }
  | {
      readonly type: 'alarm';
      readonly response: {
        readonly header: ResponseHeader;
        readonly alarms: readonly AlarmMember[];
      };
    }
  | { readonly type: 'error'; readonly error: EtcdError };

/** What HashKV answers (etcd's HashByRev): the hash at a revision and the store around it. */
export interface KvHashPlan {
  /** Runs the hash in steps; its `target` is the revision hashed. */
  readonly job: KvHashJob;
  /** The store's revision when the job was made (etcd's header revision). */
  readonly revision: number;
  /** The compact revision, -1 before any compaction (etcd's compactMainRev). */
  readonly compactRevision: number;
}

/**
 * The commands a CORRUPT alarm refuses: those etcd's applierV3Corrupt overrides (etcd
 * etcdserver/corrupt.go), which are every key-space write, its compaction, and lease grants and
 * revokes (so no lease expires while it is raised).
 */
const REFUSED_WHILE_CORRUPT: ReadonlySet<Command['type']> = new Set([
  'put',
  'deleteRange',
  'txn',
  'compact',
  'leaseGrant',
  'leaseRevoke',
]);

/**
 * An entry that is not a command, or one of the wrong shape (command.ts isCommand): a bug in the
 * proposer, or a command a broken or hostile peer forwarded.
 */
export const ERR_MALFORMED_COMMAND: EtcdError = Object.freeze({
  code: 'InvalidArgument',
  message: 'tenure: malformed command',
});

const fail = (error: EtcdError): EtcdResult => ({ type: 'error', error });

/**
 * What this member's machine has done since the process started, counted as etcd's mvcc and
 * lessor count it (etcd server/mvcc/metrics_txn.go, server/lease/metrics.go): each put, delete
 * and range op, including those inside a txn, and a txn only when it ran more than one op. Writes
 * count on every member (each applies them), ranges on the member that served them. Plain
 * numbers, read when /metrics is scraped.
 */
export interface MachineCounts {
  puts: number;
  deletes: number;
  ranges: number;
  txns: number;
  leasesGranted: number;
  leasesRevoked: number;
}

export class EtcdMachine implements StateMachine<EtcdResult>, WatchSource {
  private store: MvccStore;
  private leases = new LeaseTable();
  private authStore = new AuthStore();
  private alarmStore = new AlarmStore();
  /** Simple tokens: local to this member, registered by apply (auth-tokens.ts). */
  readonly tokens = new TokenTable();
  private applied = 0;
  private readonly hubs = new Set<WatchHub>();
  readonly counts: MachineCounts = {
    puts: 0,
    deletes: 0,
    ranges: 0,
    txns: 0,
    leasesGranted: 0,
    leasesRevoked: 0,
  };

  constructor(
    private readonly limits: EtcdLimits = DEFAULT_ETCD_LIMITS,
    /** Planted bugs for the simulator's mutation runs; never set in production. */
    private readonly mutants: Mutants = NO_MUTANTS,
  ) {
    this.store = new MvccStore(mutants);
  }

  get revision(): Revision {
    return this.store.revision;
  }

  /** Estimated bytes of the stored history (etcd's dbSize). */
  get sizeBytes(): number {
    return this.store.size;
  }

  /** The space quota (etcd's --quota-backend-bytes). */
  get quotaBytes(): number {
    return this.limits.backendBytesMax;
  }

  get compactRevision(): Revision {
    return this.store.compactRevision;
  }

  /** Keys that exist now. */
  get keyCount(): number {
    return this.store.keyCount;
  }

  /** Leases that exist now. */
  get leaseCount(): number {
    return this.leases.size;
  }

  /** Watchers on this member, over every watch stream. */
  get watcherCount(): number {
    let n = 0;
    for (const hub of this.hubs) n += hub.size;
    return n;
  }

  /** Users, roles and whether auth is on: read-only for the API layer. */
  get auth(): AuthStore {
    return this.authStore;
  }

  /** The raised alarms of one type, or all of them for NONE (etcd's AlarmStore.Get). */
  alarms(type: AlarmType = 'NONE'): readonly AlarmMember[] {
    return this.alarmStore.get(type);
  }

  /** The index of the last applied entry (etcd's consistent index). */
  get appliedIndex(): number {
    return this.applied;
  }

  apply(index: LogIndex, data: Uint8Array): EtcdResult {
    assert(index > this.applied, () => `etcd: apply of index ${index} after ${this.applied}`);
    this.applied = index;
    if (data.length === 0) return { type: 'noop' };
    const cmd = decodeCommand(data);
    return cmd === null ? fail(ERR_MALFORMED_COMMAND) : this.execute(index, cmd, data.length);
  }

  /**
   * Apply a decoded command. The log index seeds a chosen lease ID; `costBytes` (the encoded
   * size) is what a write adds against the space quota.
   */
  private execute(index: number, cmd: Command, costBytes: number): EtcdResult {
    // A CORRUPT alarm replaces etcd's whole applier chain (apply.go, Alarm), permissions and all.
    if (this.alarmStore.has('CORRUPT') && REFUSED_WHILE_CORRUPT.has(cmd.type))
      return fail(ERR_CORRUPT);
    // Permissions before the quota, as etcd chains its appliers (auth, then quota, then backend).
    const denied = this.authStore.enabled ? this.checkAuth(cmd) : null;
    if (denied) return fail(denied);
    if (this.overQuota(cmd, costBytes)) return fail(ERR_NO_SPACE);
    switch (cmd.type) {
      case 'put':
        return this.put(cmd.request);
      case 'deleteRange':
        return this.deleteRange(cmd.request);
      case 'txn':
        return this.txn(cmd.request);
      case 'compact':
        return this.compact(cmd.request);
      case 'leaseGrant':
        return this.leaseGrant(index, cmd.id, cmd.ttlSeconds, cmd.nowMs);
      case 'leaseRevoke': {
        const deadline = this.leases.deadlineMs(cmd.id);
        if (
          cmd.ifExpiredAtMs !== undefined &&
          deadline !== undefined &&
          deadline > cmd.ifExpiredAtMs
        )
          return { type: 'leaseRevoke', response: { header: this.header() } };
        return this.leaseRevoke(cmd.id);
      }
      case 'leaseKeepAlive': {
        const header = this.header();
        const ttlSeconds = this.leases.keepAlive(cmd.id, cmd.nowMs);
        return { type: 'leaseKeepAlive', response: { header, id: cmd.id, ttlSeconds } };
      }
      case 'leaseCheckpoint':
        for (const c of cmd.checkpoints) this.leases.checkpoint(c.id, c.remainingTtlSeconds);
        return { type: 'leaseCheckpoint', response: { header: this.header() } };
      case 'leaseRefreshAll':
        this.leases.refreshAll(cmd.nowMs, cmd.extraMs);
        return { type: 'leaseRefreshAll', response: { header: this.header() } };
      case 'auth':
        return this.authOp(cmd.op, cmd.as);
      case 'authenticate':
        return this.authenticate(index, cmd.name, cmd.tokenPrefix, cmd.checkedRevision);
      case 'alarm': {
        const changed =
          cmd.action === 'ACTIVATE'
            ? this.alarmStore.activate(cmd.member)
            : this.alarmStore.deactivate(cmd.member);
        const alarms = changed === null ? [] : [changed];
        return { type: 'alarm', response: { header: this.header(), alarms } };
      }
      default:
        return unreachable(cmd, 'command');
    }
  }

  /**
   * The permission a client's key-space write needs (auth-check.ts). Commands the leader makes
   * itself (expiry revokes, checkpoints, refreshes, renewals, grants) run as the server, as
   * etcd's do under its root context.
   */
  private checkAuth(cmd: Command): EtcdError | null {
    const auth = this.authStore;
    switch (cmd.type) {
      case 'put':
        return checkPut(auth, cmd.as, this.leaseKeys, cmd.request);
      case 'deleteRange':
        return checkDeleteRange(auth, cmd.as, cmd.request);
      case 'txn':
        return checkTxn(auth, cmd.as, this.leaseKeys, cmd.request);
      case 'compact':
        // Open in etcd 3.4.23; admin-only from 3.4.42 and 3.5.28.
        return auth.checkAdmin(cmd.as);
      case 'leaseRevoke':
        return cmd.ifExpiredAtMs !== undefined
          ? null
          : checkLeaseKeys(auth, cmd.as, this.leaseKeys, cmd.id);
      default:
        return null;
    }
  }

  private readonly leaseKeys: LeaseKeys = (id) => this.leases.get(id)?.keys ?? [];

  /** A read-only txn's permissions, checked by the API layer before it serves one. */
  checkTxnReadOnly(req: TxnRequest, as: AuthAs | undefined): EtcdError | null {
    return this.authStore.enabled ? checkTxn(this.authStore, as, this.leaseKeys, req) : null;
  }

  private authOp(op: AuthOp, as: AuthAs | undefined): EtcdResult {
    const { answer, tokens } = this.authStore.apply(op, as);
    this.applyTokenEffect(tokens);
    if ('code' in answer) return fail(answer);
    return { type: 'auth', response: { header: this.header(), ...answer } };
  }

  private applyTokenEffect(e: TokenEffect): void {
    if (e.kind === 'dropUser') this.tokens.dropUser(e.user);
    else if (e.kind === 'dropAll') this.tokens.dropAll();
  }

  /** etcd auth/store.go Authenticate at apply: the password was checked before proposing. */
  private authenticate(
    index: number,
    name: string,
    tokenPrefix: string,
    checkedRevision: number,
  ): EtcdResult {
    const auth = this.authStore;
    if (!auth.enabled) return fail(ERR_AUTH_NOT_ENABLED);
    const user = auth.user(name);
    if (user === undefined || user.passwordHash === null) return fail(ERR_AUTH_FAILED);
    const header = this.header();
    if (auth.revision !== checkedRevision)
      return { type: 'authenticate', response: { header, token: null } };
    const token = `${tokenPrefix}.${index}`;
    this.tokens.register(token, name, index);
    return { type: 'authenticate', response: { header, token } };
  }

  // ---- Queries on the applied state ----

  /**
   * A txn that writes nothing, evaluated on the applied state (etcd serves these on its read
   * path). It runs the code apply would run, which changes nothing for such a txn: no revision,
   * no event, no applied index.
   */
  txnReadOnly(req: TxnRequest): EtcdResult {
    assert(isReadOnlyTxn(req), 'etcd: txnReadOnly of a txn that writes');
    return this.txn(req);
  }

  /**
   * HashKV at `revision` (0: the current one), or etcd's error for a revision compacted away or
   * not yet written (mvcc/kvstore.go HashByRev checks both before hashing).
   */
  hashKv(revision: number): KvHashPlan | EtcdError {
    const current = this.store.revision;
    const compacted = this.store.compactRevision;
    if (revision > 0 && revision <= compacted) return ERR_COMPACTED;
    if (revision > current) return ERR_FUTURE_REV;
    return {
      job: this.store.hashJob(revision === 0 ? current : revision),
      revision: current,
      compactRevision: compacted === 0 ? -1 : compacted,
    };
  }

  range(req: RangeRequest): RangeResponse | EtcdError {
    this.counts.ranges++;
    return range(this.store, req);
  }

  /** A range for the server's own bookkeeping (its metrics): not counted as a client's. */
  peek(req: RangeRequest): RangeResponse | EtcdError {
    return range(this.store, req);
  }

  /** TTL −1 for an unknown lease, with no error (etcd's v3rpc/lease.go, LeaseTimeToLive). */
  leaseTimeToLive(id: LeaseId, nowMs: number, keys: boolean): LeaseTimeToLiveResponse {
    const header = this.header();
    const lease = this.leases.get(id);
    if (lease === undefined) return { header, id, ttlSeconds: -1, grantedTtlSeconds: 0, keys: [] };
    return {
      header,
      id,
      ttlSeconds: this.leases.remainingSeconds(id, nowMs),
      grantedTtlSeconds: lease.ttlSeconds,
      keys: keys ? [...lease.keys].sort().map(fromByteKey) : [],
    };
  }

  /**
   * A lease's granted TTL, leader-clock deadline and whether a checkpoint of it is in force, for
   * the leader's own bookkeeping.
   */
  leaseInfo(
    id: LeaseId,
  ):
    | { readonly ttlSeconds: number; readonly deadlineMs: number; readonly checkpointed: boolean }
    | undefined {
    const lease = this.leases.get(id);
    return (
      lease && {
        ttlSeconds: lease.ttlSeconds,
        deadlineMs: lease.expiryMs,
        checkpointed: lease.checkpointSeconds !== null,
      }
    );
  }

  leaseLeases(): LeaseLeasesResponse {
    return { header: this.header(), leases: this.leases.ids() };
  }

  /** For the leader: leases its clock says have expired, earliest first, to propose revokes. */
  expiredLeases(nowMs: number, max: number): LeaseId[] {
    return this.leases.expired(nowMs, max);
  }

  /** For observers: every lease in grant order, live; read within one turn, never kept. */
  leaseViews(): IterableIterator<LeaseView> {
    return this.leases.views();
  }

  /** For observers: open watch hubs (streams and server-side waits) and their watchers. */
  watchCounts(): { readonly hubs: number; readonly watchers: number } {
    let watchers = 0;
    for (const hub of this.hubs) watchers += hub.size;
    return { hubs: this.hubs.size, watchers };
  }

  eventsBetween(span: KeySpan, fromRev: number, toRev: number): WatchEvent[] {
    return this.store.eventsBetween(span, fromRev, toRev);
  }

  /**
   * A new watch hub (one per watch stream) fed by every later apply; `queueBytesMax` replaces
   * the limits' watchQueueBytesMax for it.
   */
  openWatchHub(queueBytesMax?: number): WatchHub {
    const limits =
      queueBytesMax === undefined
        ? this.limits
        : { ...this.limits, watchQueueBytesMax: queueBytesMax };
    const hub = new WatchHub(this, limits, this.mutants);
    this.hubs.add(hub);
    return hub;
  }

  closeWatchHub(hub: WatchHub): void {
    this.hubs.delete(hub);
  }

  // ---- Snapshots ----

  snapshot(): Uint8Array {
    return encodeSnapshotData({
      appliedIndex: this.applied,
      mvcc: this.store.toData(),
      leases: this.leases.toData(),
      ...(this.authStore.isPristine ? {} : { auth: this.authStore.toData() }),
      ...(this.alarmStore.isEmpty ? {} : { alarms: this.alarmStore.toData() }),
    });
  }

  restore(data: Uint8Array): void {
    // Everything is decoded and built before any of it replaces the machine's state: a snapshot
    // refused (SnapshotDecodeError) leaves the machine as it was.
    const s = decodeSnapshotData(data);
    const store = MvccStore.fromData(s.mvcc, this.mutants);
    const leases = LeaseTable.fromData(s.leases);
    const authStore = s.auth === undefined ? new AuthStore() : AuthStore.fromData(s.auth);
    const alarmStore = AlarmStore.fromData(s.alarms ?? []);
    this.store = store;
    this.leases = leases;
    this.authStore = authStore;
    this.alarmStore = alarmStore;
    this.applied = s.appliedIndex;
    for (const hub of this.hubs) hub.resync();
  }

  digest(): number {
    const h = this.leases.digest(this.store.digest(fnvNumber(FNV_OFFSET, this.leases.size)));
    const withAuth = this.authStore.isPristine ? h : this.authStore.digest(h);
    return this.alarmStore.isEmpty ? withAuth : this.alarmStore.digest(withAuth);
  }

  // ---- Commands ----

  private put(req: PutRequest): EtcdResult {
    const e = validatePut(req) ?? precheckPut(this.state(), req);
    if (e) return fail(e);
    this.store.beginWrite();
    const body = executePut(this.state(), req);
    const header = this.endWrite();
    this.counts.puts++;
    return { type: 'put', response: { header, ...body } };
  }

  private deleteRange(req: DeleteRangeRequest): EtcdResult {
    const e = validateDeleteRange(req);
    if (e) return fail(e);
    this.store.beginWrite();
    const body = executeDeleteRange(this.state(), req);
    const header = this.endWrite();
    this.counts.deletes++;
    return { type: 'deleteRange', response: { header, ...body } };
  }

  private txn(req: TxnRequest): EtcdResult {
    const e = validateTxn(req, this.limits.txnOpsMax) ?? checkDuplicates(req);
    if (e) return fail(e);
    const path = txnPath(this.store, req);
    const pe = precheckTxn(this.state(), req, path);
    if (pe) return fail(pe);
    this.store.beginWrite();
    const resp = executeTxn(this.state(), req, path);
    if (countTxnOps(resp, this.counts) > 1) this.counts.txns++;
    return { type: 'txn', response: withTxnHeader(resp, this.endWrite()) };
  }

  private compact(req: CompactionRequest): EtcdResult {
    if (req.revision <= this.store.compactRevision) return fail(ERR_COMPACTED);
    if (req.revision > this.store.revision) return fail(ERR_FUTURE_REV);
    this.store.compact(req.revision);
    return { type: 'compact', response: { header: this.header() } };
  }

  private leaseGrant(index: number, id: LeaseId, ttlSeconds: number, nowMs: number): EtcdResult {
    // Only a proposer bug can put a non-int64 ID in the log: the wire format cannot carry one.
    if (id < LEASE_ID_MIN || id > LEASE_ID_MAX) return fail(ERR_MALFORMED_COMMAND);
    if (ttlSeconds > this.limits.leaseTtlMaxSeconds) return fail(ERR_LEASE_TTL_TOO_LARGE);
    if (id !== 0n && this.leases.has(id)) return fail(ERR_LEASE_EXIST);
    const chosen = id === 0n ? this.leases.chooseId(index) : id;
    const ttl = Math.max(Math.trunc(ttlSeconds), this.limits.leaseTtlMinSeconds);
    this.leases.grant(chosen, ttl, nowMs);
    this.counts.leasesGranted++;
    return { type: 'leaseGrant', response: { header: this.header(), id: chosen, ttlSeconds: ttl } };
  }

  /** Revoke: the lease's keys are deleted in one revision, in key order. */
  private leaseRevoke(id: LeaseId): EtcdResult {
    if (!this.leases.has(id)) return fail(ERR_LEASE_NOT_FOUND);
    const keys = this.leases.revoke(id);
    // The planted bug: the last attached key is left behind, attached to a lease that is gone.
    if (this.mutants.has('revokeMissesKey')) keys.pop();
    this.store.beginWrite();
    for (const key of keys) deleteKey(this.state(), key);
    this.counts.leasesRevoked++;
    // etcd's lessor deletes a revoked lease's keys in one write txn, one delete op per key.
    this.counts.deletes += keys.length;
    if (keys.length > 1) this.counts.txns++;
    return { type: 'leaseRevoke', response: { header: this.endWrite() } };
  }

  /**
   * etcd checks the quota for puts, writing txns and lease grants: the stored size plus the
   * request's must fit. Deletes, revokes and compactions are always allowed, since they free
   * space. Unlike etcd, passing the quota raises no sticky NOSPACE alarm: space freed by
   * compaction is usable again at once. A NOSPACE alarm raised by a client (Alarm ACTIVATE)
   * refuses the same commands until it is cleared, as etcd's applierV3Capped does.
   */
  private overQuota(cmd: Command, costBytes: number): boolean {
    const quotaChecked =
      cmd.type === 'put' ||
      cmd.type === 'leaseGrant' ||
      (cmd.type === 'txn' && !isReadOnlyTxn(cmd.request));
    if (!quotaChecked) return false;
    return (
      this.alarmStore.has('NOSPACE') || this.store.size + costBytes > this.limits.backendBytesMax
    );
  }

  private state(): KvState {
    return { store: this.store, leases: this.leases };
  }

  private header(): ResponseHeader {
    return { revision: this.store.revision };
  }

  /** Close the write transaction and hand its events to every watch hub. */
  private endWrite(): ResponseHeader {
    const { revision, events } = this.store.endWrite();
    if (events.length > 0) for (const hub of this.hubs) hub.publish(revision, events);
    return { revision };
  }
}

/** Add the ops a txn ran (its responses, nested txns included) to `counts`; returns how many. */
function countTxnOps(resp: TxnResponse, counts: MachineCounts): number {
  let n = 0;
  for (const r of resp.responses) {
    if (r.type === 'range') counts.ranges++;
    else if (r.type === 'put') counts.puts++;
    else if (r.type === 'deleteRange') counts.deletes++;
    else {
      n += countTxnOps(r.response, counts);
      continue;
    }
    n++;
  }
  return n;
}
