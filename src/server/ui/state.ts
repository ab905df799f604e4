// GET /ui/api/state: one member's view of the cluster, computed on request from its Raft state,
// its key space and what its feed recorded (member-feed.ts). Every list is capped, so a cluster
// with a million leases costs one pass over the lease table, not a page of a million rows.
//
// What a member cannot know is said so: replication progress and round trips exist only on the
// leader; lease deadlines are on the leader's clock (lease-clock.ts), so a follower asks the
// leader through the LeaseTimeToLive path for the first few and says "unknown" for the rest;
// a peer's suspicion is φ accrual over what arrives from it (peer-suspicion.ts).
import { NONE, type NodeId } from '../../core/base/units.js';
import { fromByteKey, keySpan, prefixEnd, toByteKey } from '../../core/state/key-range.js';
import type { KeyValue } from '../../core/state/kv-types.js';
import type { Member } from '../../replica/member/member.js';
import { hexId } from '../../replica/member/member-id.js';
import {
  keyText,
  leaseIdText,
  queueKeyOf,
  type LeaderChange,
  type MemberFeed,
  type PeerLink,
  type Rtt,
  type Sample,
  type Silence,
} from './member-feed.js';

/** Leases listed at most (in grant order); the count covers all. */
export const LEASES_SHOWN_MAX = 500;
/** Keys named per lease; the count covers all. */
export const LEASE_KEYS_SHOWN_MAX = 5;
/** Leases whose remaining TTL a follower asks the leader for (LeaseTimeToLive each). */
export const FOLLOWER_TTL_ASKS_MAX = 32;
/** How long a follower waits for those answers, in ms. */
export const FOLLOWER_TTL_WAIT_MS = 1000;
/** Leased keys looked at to find lock and election queues. */
export const QUEUE_SCAN_KEYS_MAX = 20_000;
/** Queues listed at most. */
export const QUEUES_SHOWN_MAX = 200;
/** Waiters listed per queue; the count covers all. */
export const QUEUE_WAITERS_SHOWN_MAX = 20;
/** Revisions of a queue's history read back to date its holder's acquisition. */
const ACQUISITION_HISTORY_EVENTS_MAX = 10_000;
/** What stands for a key or queue name while auth is on (the dashboard has no login). */
export const HIDDEN = '(hidden: auth is enabled)';

export interface MemberRow {
  readonly id: string;
  readonly name: string;
  readonly clientUrls: readonly string[];
  readonly peerUrls: readonly string[];
  readonly isLearner: boolean;
  readonly isLeader: boolean;
  readonly isSelf: boolean;
}

export interface PeerRow {
  readonly id: string;
  readonly name: string;
  /** The leader's Progress of this follower; null unless this member leads. */
  readonly replication: {
    readonly match: number;
    readonly next: number;
    readonly lag: number;
    readonly state: string;
  } | null;
  /** Heartbeat round trips timed by this member as leader; null when it has none. */
  readonly rtt: Rtt | null;
  readonly silentMs: number | null;
  /** φ accrual suspicion of the peer (peer-suspicion.ts); null where Raft hears nothing from it. */
  readonly phi: number | null;
  readonly silence: Silence;
  readonly link: PeerLink | null;
}

export interface LeaseRow {
  /** As etcdctl prints lease IDs (leaseIdText). */
  readonly id: string;
  readonly ttlSeconds: number;
  /** Ms left by the leader's clock when this was computed; null when unknown. */
  readonly remainingMs: number | null;
  readonly keyCount: number;
  readonly keys: readonly string[];
}

export interface QueueEntryRow {
  readonly key: string;
  /** As etcdctl prints it; '0' for a key on no lease. */
  readonly lease: string;
  /** The key's create revision: the fencing token of a lock holder (lock.ts). */
  readonly token: number;
}

export interface QueueRow {
  readonly name: string;
  /** By the holder's value: a lock's key is empty, a campaign's holds its proclaimed value. */
  readonly kind: 'lock' | 'election';
  readonly holder: QueueEntryRow & {
    readonly value: string;
    /** The revision at which it became the head (its create revision or a predecessor's delete). */
    readonly acquiredRevision: number;
    /** Wall-clock ms at which that revision existed at the latest; null if not known. */
    readonly heldSince: number | null;
    /** True when `heldSince` is an upper bound from the revision log, not an observation. */
    readonly heldSinceApprox: boolean;
  };
  readonly waiters: readonly QueueEntryRow[];
  readonly waiting: number;
}

export interface DashboardState {
  readonly at: number;
  readonly member: {
    readonly id: string;
    readonly name: string;
    readonly role: string;
    readonly term: number;
    readonly leader: string | null;
    readonly commitIndex: number;
    readonly appliedIndex: number;
    readonly lastIndex: number;
    readonly revision: number;
    readonly compactRevision: number;
    readonly dbSizeBytes: number;
    readonly dbSizeQuotaBytes: number;
    readonly isLearner: boolean;
    readonly startedAt: number;
    readonly heartbeatMs: number;
    readonly electionMs: number;
  };
  readonly members: readonly MemberRow[];
  readonly peers: readonly PeerRow[];
  readonly leaderChanges: readonly LeaderChange[];
  readonly samples: readonly Sample[];
  readonly leases: {
    readonly count: number;
    readonly shown: number;
    /** Where remainingMs comes from. */
    readonly remainingSource: 'leader clock' | 'asked the leader' | 'unknown';
    readonly items: readonly LeaseRow[];
  };
  readonly queues: {
    readonly count: number;
    /** True when the scan stopped at QUEUE_SCAN_KEYS_MAX leased keys. */
    readonly truncated: boolean;
    readonly items: readonly QueueRow[];
  };
  readonly watches: { readonly hubs: number; readonly watchers: number };
  readonly auth: { readonly enabled: boolean };
  /** How to read the figures: what is measured where. */
  readonly notes: Readonly<Record<string, string>>;
}

export interface StateOptions {
  readonly heartbeatMs: number;
  readonly electionMs: number;
  readonly wallMs?: () => number;
}

const NOTES = {
  replication:
    'match/next/lag: the leader’s Raft progress of each follower; only the leader has it',
  rtt:
    'heartbeat round trip timed by the leader (sent → answered, the follower’s processing ' +
    'included); the transport itself measures none',
  silence:
    'suspicion is φ accrual over the batches each peer sends (ok < φ 3 ≤ late < φ 8 ≤ ' +
    'suspect), with the time since the last one; it observes only (the election timeout ' +
    'decides elections); followers hear only the leader, so between followers it is n/a',
  leases:
    'remaining is on the leader’s clock: computed there, asked of it by a follower for the ' +
    'first few, unknown otherwise',
  queues:
    'locks and elections found from leased keys of the form name/<lease hex>; the holder is ' +
    'the oldest key under name/ and its create revision is the fencing token',
};

function memberRows(member: Member): MemberRow[] {
  const leader = member.replica.raft.leader;
  return member.members().map((m) => ({
    id: hexId(m.id),
    name: m.name,
    clientUrls: m.clientUrls,
    peerUrls: m.peerUrls,
    isLearner: m.isLearner,
    isLeader: leader !== NONE && m.id === BigInt(leader),
    isSelf: m.id === member.memberId,
  }));
}

function peerRows(member: Member, feed: MemberFeed): PeerRow[] {
  const raft = member.replica.raft;
  // A follower's Progress map is what it had when it last led: not news.
  const progress = raft.role === 'leader' ? raft.progressView() : undefined;
  const last = raft.log.lastIndex();
  const out: PeerRow[] = [];
  for (const m of member.members()) {
    const id = Number(m.id) as NodeId;
    if (id === member.id) continue;
    const pr = progress?.get(id);
    const { silentMs, phi, silence } = feed.silenceOf(id);
    out.push({
      id: hexId(m.id),
      name: m.name,
      replication:
        pr === undefined
          ? null
          : {
              match: pr.match,
              next: pr.next,
              lag: Math.max(0, last - pr.match),
              state: pr.state,
            },
      rtt: raft.role === 'leader' ? (feed.rtt(id) ?? null) : null,
      silentMs: silentMs === null ? null : Math.round(silentMs),
      phi,
      silence,
      link: feed.link(id) ?? null,
    });
  }
  return out;
}

async function leaseRows(
  member: Member,
  hide: boolean,
): Promise<{ items: LeaseRow[]; source: DashboardState['leases']['remainingSource'] }> {
  const items: { row: LeaseRow; id: bigint }[] = [];
  for (const l of member.machine.leaseViews()) {
    if (items.length >= LEASES_SHOWN_MAX) break;
    const keys: string[] = [];
    for (const k of l.keys) {
      if (keys.length >= LEASE_KEYS_SHOWN_MAX) break;
      keys.push(hide ? HIDDEN : keyText(k));
    }
    items.push({
      id: l.id,
      row: {
        id: leaseIdText(l.id),
        ttlSeconds: l.ttlSeconds,
        remainingMs: member.leaseRemainingMs(l.id) ?? null,
        keyCount: l.keys.size,
        keys,
      },
    });
  }
  if (member.isLeader) {
    const known = items.every((i) => i.row.remainingMs !== null);
    return { items: items.map((i) => i.row), source: known ? 'leader clock' : 'unknown' };
  }
  if (items.length === 0 || !member.hasLeader())
    return { items: items.map((i) => i.row), source: 'unknown' };
  // A follower has no deadlines of its own: the leader answers, as it does for etcdctl.
  const signal = AbortSignal.timeout(FOLLOWER_TTL_WAIT_MS);
  const asked = await Promise.all(
    items.slice(0, FOLLOWER_TTL_ASKS_MAX).map(async ({ id, row }) => {
      try {
        const r = await member.leaseTimeToLive(id, false, signal);
        return r.ttlSeconds < 0 ? row : { ...row, remainingMs: r.ttlSeconds * 1000 };
      } catch {
        return row;
      }
    }),
  );
  const rows = [...asked, ...items.slice(FOLLOWER_TTL_ASKS_MAX).map((i) => i.row)];
  return { items: rows, source: 'asked the leader' };
}

/** The revision at which `holder` became its queue's head: its creation or a predecessor's end. */
function acquisitionRevision(member: Member, prefix: string, holder: KeyValue): number {
  const key = fromByteKey(prefix);
  const events = member.machine.eventsBetween(
    keySpan(key, prefixEnd(key)),
    holder.createRevision,
    member.machine.revision,
  );
  let rev: number = holder.createRevision;
  for (const e of events.slice(-ACQUISITION_HISTORY_EVENTS_MAX)) {
    // An older key's delete let the holder in: the newest one is when it got the head.
    if (e.type === 'DELETE' && (e.prevKv?.createRevision ?? Infinity) < holder.createRevision)
      rev = Math.max(rev, e.kv.modRevision);
  }
  return rev;
}

function queueRows(
  member: Member,
  feed: MemberFeed,
  hide: boolean,
): { items: QueueRow[]; count: number; truncated: boolean } {
  const prefixes = new Set<string>();
  let scanned = 0;
  let truncated = false;
  scan: for (const l of member.machine.leaseViews()) {
    for (const k of l.keys) {
      if (++scanned > QUEUE_SCAN_KEYS_MAX) {
        truncated = true;
        break scan;
      }
      const q = queueKeyOf(k, l.id);
      if (q !== undefined) prefixes.add(q.prefix);
    }
  }
  const items: QueueRow[] = [];
  for (const prefix of [...prefixes].sort().slice(0, QUEUES_SHOWN_MAX)) {
    const key = fromByteKey(prefix);
    const r = member.machine.range({
      key,
      rangeEnd: prefixEnd(key),
      sortTarget: 'CREATE',
      sortOrder: 'ASCEND',
      limit: QUEUE_WAITERS_SHOWN_MAX + 1,
    });
    if (!('kvs' in r)) continue;
    const [holder, ...waiters] = r.kvs;
    if (holder === undefined) continue;
    const entry = (kv: KeyValue): QueueEntryRow => ({
      key: hide ? HIDDEN : keyText(toByteKey(kv.key)),
      lease: kv.lease === 0n ? '0' : leaseIdText(kv.lease),
      token: kv.createRevision,
    });
    const acquiredRevision = acquisitionRevision(member, prefix, holder);
    const seen = feed.acquiredAt(toByteKey(holder.key));
    const logged = feed.timeOfRevision(acquiredRevision);
    const value = Buffer.from(holder.value).toString('utf8');
    items.push({
      name: hide ? HIDDEN : keyText(prefix.slice(0, -1)),
      kind: holder.value.length === 0 ? 'lock' : 'election',
      holder: {
        ...entry(holder),
        value: hide ? '' : value,
        acquiredRevision,
        heldSince: seen ?? logged ?? null,
        heldSinceApprox: seen === undefined,
      },
      waiters: waiters.map(entry),
      waiting: Math.max(0, r.count - 1),
    });
  }
  return { items, count: prefixes.size, truncated };
}

export async function dashboardState(
  member: Member,
  feed: MemberFeed,
  options: StateOptions,
): Promise<DashboardState> {
  const raft = member.replica.raft;
  const status = member.status();
  const hide = member.machine.auth.enabled;
  const leases = await leaseRows(member, hide);
  const queues = queueRows(member, feed, hide);
  return {
    at: (options.wallMs ?? Date.now)(),
    member: {
      id: hexId(member.memberId),
      name: member.name,
      role: raft.role,
      term: raft.term,
      leader: raft.leader === NONE ? null : hexId(raft.leader),
      commitIndex: raft.log.committed,
      appliedIndex: raft.log.applied,
      lastIndex: raft.log.lastIndex(),
      revision: member.machine.revision,
      compactRevision: member.machine.compactRevision,
      dbSizeBytes: status.dbSizeBytes,
      dbSizeQuotaBytes: status.dbSizeQuotaBytes,
      isLearner: status.isLearner,
      startedAt: feed.startedAt,
      heartbeatMs: options.heartbeatMs,
      electionMs: options.electionMs,
    },
    members: memberRows(member),
    peers: peerRows(member, feed),
    leaderChanges: feed.leaderChanges(),
    samples: feed.recentSamples(),
    leases: {
      count: member.machine.leaseCount,
      shown: leases.items.length,
      remainingSource: leases.source,
      items: leases.items,
    },
    queues,
    watches: member.machine.watchCounts(),
    auth: { enabled: hide },
    notes: NOTES,
  };
}
