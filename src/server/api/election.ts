// The Election service (`v3electionpb.Election`, etcd server/etcdserver/api/v3election): etcd's
// server runs the Go concurrency.Election recipe (client/v3/concurrency/election.go) around the
// caller's lease, and so does this one, writing through the node's log and waiting on its
// applied state. Same key layout and queue order as Go's concurrency.Election and `etcdctl
// elect`, so they campaign together.
//
// Leadership is only as safe as its fencing: a leader must guard its writes with the leader
// key's create revision (`LeaderKey.rev`; etcd docs, "Notes on the usage of lock and lease",
// etcd PR #11490).
import type { EtcdError } from '../../core/state/etcd-errors.js';
import {
  ERR_ELECTION_NO_LEADER,
  ERR_ELECTION_NOT_LEADER,
  ERR_LEASE_NOT_FOUND,
} from '../../core/state/etcd-errors.js';
import { bytesEqual, prefixEnd } from '../../core/state/key-range.js';
import type { KeyValue, LeaseId, ResponseHeader } from '../../core/state/kv-types.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ApiStatus, CallInfo, ServiceHandlers, WireObject } from './convert.js';
import {
  ApiError,
  asMessage,
  bigintField,
  bytesField,
  numberField,
  toBuffer,
  toProtoHeader,
  toProtoKeyValue,
} from './convert.js';
import { queuePrefix } from '../../core/queue/layout.js';
import { fencedDelete, fencedPut, ownerRange } from '../../core/queue/requests.js';
import { proposeTxn, rangeNow, sessionLease, queueWaiter, throwIfAborted } from './lock-session.js';
import { toRangeRequest, toTxnRequest } from './queue-requests.js';
import { waitForTurn } from './wait-deletes.js';
import { authOn, requireKeysAsCaller, type KeyNeed } from './auth-identity.js';
import { queueNeeds } from './lock.js';
import { MachineWatch } from './wait-watch.js';

/** etcd's `ErrMissingLeaderKey` (v3election), a plain Go error: code Unknown on the wire. */
export const ERR_MISSING_LEADER_KEY: ApiStatus = Object.freeze({
  code: 'Unknown',
  message: '"leader" field must be provided',
});

/** Proof of leadership (v3electionpb.LeaderKey). */
export interface LeaderKey {
  /** The election's name, without the trailing "/". */
  readonly name: Uint8Array;
  readonly key: Uint8Array;
  /** The key's create revision: the fencing token. */
  readonly rev: number;
  readonly lease: LeaseId;
}

export interface Elected {
  /** The header of the txn that queued the candidate, not of the moment of winning (b.11). */
  readonly header: ResponseHeader;
  readonly leader: LeaderKey;
}

/**
 * Campaign for `name` with `lease` (0: an orphaned 60 s lease) until this candidate leads.
 *
 * 1. `Txn(if CreateRevision(key) == 0 then Put(key, value, lease) else Get(key))`; a missing
 *    lease fails here with `etcdserver: requested lease not found`, as in etcd.
 * 2. The key already existed (the same lease campaigned before) with another value: Proclaim it.
 * 3. Wait for the predecessor only (wait-deletes.ts).
 *
 * Deliberately unlike etcd (etcd#19597): the candidate never wins without its key.
 * If the key is gone when the wait ends (or goes while queued), the Campaign fails instead of
 * returning a phantom leadership, with the error closest to etcd's own for the cause:
 *  - the lease is gone (expired or revoked, which deletes the key): `etcdserver: requested lease
 *    not found` (NotFound), what etcd's Campaign answers for a lease that is already gone when
 *    it starts. Go clientv3 maps it to rpctypes.ErrLeaseNotFound and etcd3 npm to
 *    EtcdLeaseInvalidError, so clients already know to take a new lease and campaign again.
 *    (`mutex: session is expired` is the Mutex's error, which etcd's Election never returns,
 *    and its code Unknown lets no client classify it.)
 *  - the lease lives but the key was deleted (resigned from elsewhere): `election: not leader`,
 *    what a Proclaim with this candidacy would answer; the lease is fine, so saying it is not
 *    found would mislead.
 *
 * On cancellation or any error after queueing, the key is withdrawn if this call created it
 * (etcd resigns only on cancellation and leaves the key on other errors, #21128).
 */
export async function campaign(
  backend: KvBackend,
  name: Uint8Array,
  requestedLease: LeaseId,
  value: Uint8Array,
  signal: AbortSignal,
): Promise<Elected> {
  return queueWaiter(
    backend,
    name,
    requestedLease,
    value,
    [],
    signal,
    async ({ lease, prefix, key, txn, rev, existing }) => {
      const leader: LeaderKey = { name, key, rev, lease };
      if (existing !== undefined && !bytesEqual(existing.kv.value, value)) {
        await proclaim(backend, leader, value, signal);
      }
      const outcome = await waitForTurn(backend, prefix, key, rev, signal);
      if (outcome.type === 'lost') throw new ApiError(lostCandidacy(backend, lease));
      throwIfAborted(signal); // a client that left would never learn it leads
      return { header: txn.header, leader };
    },
  );
}

/** Why a queued candidate's key is gone; see campaign(). */
function lostCandidacy(backend: KvBackend, lease: LeaseId): EtcdError {
  const leaseAlive = backend.machine.leaseInfo(lease) !== undefined;
  return leaseAlive ? ERR_ELECTION_NOT_LEADER : ERR_LEASE_NOT_FOUND;
}

/** The leader key's incarnation, which Proclaim and Resign are fenced on. */
function fenceOf(leader: LeaderKey): { readonly key: Uint8Array; readonly token: bigint } {
  return { key: leader.key, token: BigInt(leader.rev) };
}

/**
 * `Txn(if CreateRevision(key) == rev then Put(key, value, lease))`, else `election: not leader`.
 * etcd puts with the session's lease, which for a LeaderKey with lease 0 is a freshly granted,
 * orphaned one (`es.session(ctx, 0)`); mirrored, so the key never loses its lease to a Put.
 */
export async function proclaim(
  backend: KvBackend,
  leader: LeaderKey,
  value: Uint8Array,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  const lease = await sessionLease(backend, leader.lease, signal);
  const txn = await proposeTxn(
    backend,
    toTxnRequest(fencedPut(fenceOf(leader), value, lease)),
    signal,
  );
  if (!txn.succeeded) throw new ApiError(ERR_ELECTION_NOT_LEADER);
  return txn.header;
}

/**
 * `Txn(if CreateRevision(key) == rev then Delete(key))`; succeeds even when the compare fails
 * (Election.Resign in etcd client/v3/concurrency/election.go). etcd also builds a session first,
 * granting an unused lease for lease 0; that lease has no effect, so it is not granted here.
 */
export async function resign(
  backend: KvBackend,
  leader: LeaderKey,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  const txn = await proposeTxn(backend, toTxnRequest(fencedDelete(fenceOf(leader))), signal);
  return txn.header;
}

/** The first-created key under `name/`, or `election: no leader`. */
export async function currentLeader(
  backend: KvBackend,
  name: Uint8Array,
  signal: AbortSignal,
): Promise<{ readonly header: ResponseHeader; readonly kv: KeyValue }> {
  await backend.readBarrier(signal);
  const r = rangeNow(backend, toRangeRequest(ownerRange(queuePrefix(name))));
  const kv = r.kvs[0];
  if (kv === undefined) throw new ApiError(ERR_ELECTION_NO_LEADER);
  return { header: r.header, kv };
}

/**
 * Where Observe sends each leader value: the header of the read or watch response that saw it.
 * It resolves when the transport can take the next one (a client that does not read stalls it).
 */
export type LeaderSink = (header: ResponseHeader, kv: KeyValue) => Promise<void>;

/**
 * Follow the election until `signal` aborts (Election.observe in etcd
 * client/v3/concurrency/election.go):
 * 1. read the leader (first-created key); with none, wait for a PUT under the prefix and read
 *    again;
 * 2. send it;
 * 3. watch that key from the next revision and send each PUT; on its DELETE, go back to 1.
 * Never sends a deletion or "no leader"; may skip intermediate values (#7756), as etcd does.
 *
 * Unlike etcd, the first PUT after a leaderless spell is not sent from the watch event but
 * re-read, so a key deleted again at once is not reported as the leader; and a watch cancelled
 * by compaction leads to a re-read instead of ending the stream (#7815, #18163). Each read and
 * the watch that follows it are taken at the same revision, so no change is missed between.
 */
export async function observeLeader(
  backend: KvBackend,
  name: Uint8Array,
  signal: AbortSignal,
  sink: LeaderSink,
): Promise<never> {
  const prefix = queuePrefix(name);
  for (;;) {
    await backend.readBarrier(signal);
    const r = rangeNow(backend, toRangeRequest(ownerRange(prefix)));
    const leader = r.kvs[0];
    if (leader === undefined) {
      const watch = MachineWatch.open(backend.machine, [
        { key: prefix, rangeEnd: prefixEnd(prefix), filters: ['NODELETE'] },
      ]);
      try {
        await watch.next(signal);
      } finally {
        watch.close();
      }
      continue;
    }
    await sink(r.header, leader);
    const watch = MachineWatch.open(backend.machine, [{ key: leader.key }]);
    try {
      await followKey(watch, signal, sink);
    } finally {
      watch.close();
    }
  }
}

/** Send each PUT of the watched key; return on its DELETE or on a cancelled watcher. */
async function followKey(watch: MachineWatch, signal: AbortSignal, sink: LeaderSink) {
  for (;;) {
    for (const r of await watch.next(signal)) {
      if (r.canceled) return;
      for (const e of r.events) {
        if (e.type === 'DELETE') return;
        await sink(r.header, e.kv);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The wire

function leaderKeyField(m: WireObject): LeaderKey {
  const v = m['leader'];
  // proto-loader fills an unset message field with null; etcd refuses a nil `leader`.
  if (v === null || v === undefined) throw new ApiError(ERR_MISSING_LEADER_KEY);
  const l = asMessage(v, 'leader');
  return {
    name: bytesField(l, 'name'),
    key: bytesField(l, 'key'),
    rev: numberField(l, 'rev'),
    lease: bigintField(l, 'lease'),
  };
}

function toProtoLeaderKey(l: LeaderKey): object {
  return {
    name: toBuffer(l.name),
    key: toBuffer(l.key),
    rev: String(l.rev),
    lease: l.lease.toString(),
  };
}

/** Proclaim and Resign write the leader's own key, fenced by a compare on it. */
function leaderNeeds(l: LeaderKey): KeyNeed[] {
  return [
    { need: 'read', key: l.key },
    { need: 'write', key: l.key },
  ];
}

/** Leader and Observe read the queue `name/`. */
function readNeeds(m: WireObject): KeyNeed[] {
  const prefix = queuePrefix(bytesField(m, 'name'));
  return [{ need: 'read', key: prefix, rangeEnd: prefixEnd(prefix) }];
}

export function electionHandlers(backend: KvBackend): ServiceHandlers {
  const header = (h: ResponseHeader) => toProtoHeader(backend, h.revision);
  return {
    unary: {
      '/v3electionpb.Election/Campaign': async (req: unknown, call: CallInfo) => {
        const m = asMessage(req);
        if (authOn(backend)) await requireKeysAsCaller(backend, call, queueNeeds(m));
        const r = await campaign(
          backend,
          bytesField(m, 'name'),
          bigintField(m, 'lease'),
          bytesField(m, 'value'),
          call.signal,
        );
        return { header: header(r.header), leader: toProtoLeaderKey(r.leader) };
      },
      '/v3electionpb.Election/Proclaim': async (req: unknown, call: CallInfo) => {
        const m = asMessage(req);
        const leader = leaderKeyField(m);
        if (authOn(backend)) await requireKeysAsCaller(backend, call, leaderNeeds(leader));
        return {
          header: header(await proclaim(backend, leader, bytesField(m, 'value'), call.signal)),
        };
      },
      '/v3electionpb.Election/Leader': async (req: unknown, call: CallInfo) => {
        if (authOn(backend)) await requireKeysAsCaller(backend, call, readNeeds(asMessage(req)));
        const r = await currentLeader(backend, bytesField(asMessage(req), 'name'), call.signal);
        return { header: header(r.header), kv: toProtoKeyValue(r.kv) };
      },
      '/v3electionpb.Election/Resign': async (req: unknown, call: CallInfo) => {
        const leader = leaderKeyField(asMessage(req));
        if (authOn(backend)) await requireKeysAsCaller(backend, call, leaderNeeds(leader));
        return { header: header(await resign(backend, leader, call.signal)) };
      },
    },
    serverStream: {
      '/v3electionpb.Election/Observe': async (req: unknown, call: CallInfo, send) => {
        const name = bytesField(asMessage(req), 'name');
        if (authOn(backend)) await requireKeysAsCaller(backend, call, readNeeds(asMessage(req)));
        await observeLeader(backend, name, call.signal, (h, kv) =>
          send({ header: header(h), kv: toProtoKeyValue(kv) }),
        );
      },
    },
  };
}
