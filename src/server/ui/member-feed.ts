// What a member's dashboard (/ui, src/server/ui/routes.ts) must record as it happens, because no
// state holds it afterwards: leader changes, the leader's heartbeat round trips, the silence of
// each peer, lease grants, revokes and expiries, lock hand-overs, and once a second a sample of
// replication and of the key space's revision (to date a lock's acquisition later). The rest of
// the dashboard is computed on request from the member's state (state.ts).
//
// Cheap when nobody looks: the hooks below are a type test per Raft message and per applied
// entry, and the 1 s sampler reads a few fields. Lock events need a watch hub over the whole key
// space (as watch-service.ts opens one per stream): it is open only while an event stream is.
//
// A peer's suspicion is its φ (peer-suspicion.ts: a φ accrual detector per peer, fed every batch
// that arrives from it), in bands: ok below φ 3, late below φ 8, suspect from φ 8. It observes
// only: Raft's election timeout still decides elections.
import { NONE, type NodeId } from '../../core/base/units.js';
import type { Message, SoftState } from '../../core/raft/types.js';
import { fromByteKey, prefixEnd, toByteKey } from '../../core/state/key-range.js';
import type { EtcdMachine } from '../../core/state/etcd-machine.js';
import type { KeyValue, WatchEvent } from '../../core/state/kv-types.js';
import type { WatchHub } from '../../core/state/watch-hub.js';
import type { Cancel, Clock, PeerChannel, Transport } from '../../replica/io.js';
import type { Member } from '../../replica/member/member.js';
import { hexId } from '../../replica/member/member-id.js';
import type { ReplicaObserver } from '../../replica/replica.js';
import { decodeEtcdEntry } from '../../replica/member/server-machine.js';
import { hearsFrom, suspicionOf, type PeerSuspicion, type Suspicion } from '../peer-suspicion.js';
import type { PeerEvent } from '../peer-transport.js';

/** Leader changes kept (the dashboard's timeline), oldest dropped first. */
export const LEADER_CHANGES_MAX = 200;
/** How often the sampler runs, in ms: the charts' resolution and the revision log's. */
export const SAMPLE_INTERVAL_MS = 1000;
/** Samples kept for the charts: five minutes at one a second. */
export const SAMPLES_MAX = 300;
/** Revision readings kept to date lock acquisitions: an hour at one a second. */
export const REVISION_TIMES_MAX = 3600;
/** A heartbeat unanswered this long is given up on, in ms (the next one is timed instead). */
export const RTT_PENDING_MAX_MS = 2000;
/** The weight of a new round trip in the smoothed one (RFC 6298 §2.3's alpha). */
const SRTT_ALPHA = 1 / 8;
/** Lock queues whose head the event stream remembers (to tell an acquisition once). */
export const LOCK_QUEUES_TRACKED_MAX = 1000;
/** Listeners (event streams) at most. */
export const FEED_LISTENERS_MAX = 64;

/** A peer's suspicion band (peer-suspicion.ts), or 'n/a' for a peer Raft does not hear from. */
export type Silence = Suspicion | 'n/a';

export interface LeaderChange {
  readonly term: number;
  /** The leader's member ID in hex, or null while none is known. */
  readonly leader: string | null;
  /** Wall-clock ms (Date.now) on this member when it learned of the change. */
  readonly at: number;
}

export interface PeerSample {
  readonly id: string;
  /** The leader's last index minus the follower's match index; null unless this member leads. */
  readonly lag: number | null;
  /** The last heartbeat round trip in ms; null unless this member leads and has timed one. */
  readonly rttMs: number | null;
  /** Ms since anything arrived from the peer; null if never. */
  readonly silentMs: number | null;
}

export interface Sample {
  /** Wall-clock ms. */
  readonly at: number;
  readonly term: number;
  readonly leader: string | null;
  readonly commit: number;
  readonly applied: number;
  readonly revision: number;
  readonly peers: readonly PeerSample[];
}

export interface Rtt {
  readonly lastMs: number;
  readonly smoothedMs: number;
  readonly samples: number;
  /** Wall-clock ms of the last sample. */
  readonly at: number;
}

export interface PeerLink {
  /** Our outbound connection to the peer (peer-transport.ts). */
  readonly connected: boolean;
  /** Wall-clock ms of the last connect or disconnect; null if neither happened yet. */
  readonly since: number | null;
  readonly error: string | null;
}

export type LockAction = 'queued' | 'acquired' | 'released' | 'withdrawn';

export type FeedEvent =
  | { readonly type: 'role'; readonly at: number; readonly role: string; readonly term: number }
  | {
      readonly type: 'leader';
      readonly at: number;
      readonly term: number;
      readonly leader: string | null;
    }
  | {
      readonly type: 'lease';
      readonly at: number;
      readonly action: 'granted' | 'revoked' | 'expired';
      /** As etcdctl prints lease IDs (leaseIdText). */
      readonly id: string;
      readonly ttlSeconds: number | null;
    }
  | {
      readonly type: 'lock';
      readonly at: number;
      readonly action: LockAction;
      readonly name: string;
      readonly key: string;
      readonly lease: string;
      /** The key's create revision: the fencing token (lock.ts). */
      readonly token: number;
      readonly revision: number;
    }
  | {
      readonly type: 'peer';
      readonly at: number;
      readonly peer: string;
      readonly silence: Silence;
      readonly silentMs: number | null;
      readonly phi: number | null;
    }
  | ({ readonly type: 'sample' } & Sample);

export type FeedListener = (e: FeedEvent) => void;

export interface MemberFeedOptions {
  readonly clock: Clock;
  /** φ per peer (node.ts feeds it from the peer transport). */
  readonly suspicion: PeerSuspicion;
  /** Wall-clock ms, for display only (never for a duration); default Date.now. */
  readonly wallMs?: () => number;
}

/** The parts of a key that make it a queue entry of etcd's lock/election layout, if it is one. */
export interface QueueKey {
  /** The queue's name: the key without `/<lease hex>`. */
  readonly name: string;
  /** `name/`, as bytes of a ByteKey (one char per byte). */
  readonly prefix: string;
  readonly leaseHex: string;
}

const utf8 = new TextDecoder();

/** A lease ID as etcdctl prints it (`%016x`), so that the two can be compared by eye. */
export function leaseIdText(id: bigint): string {
  return id < 0n ? id.toString(16) : id.toString(16).padStart(16, '0');
}

/** Bytes of a ByteKey as text (UTF-8, with U+FFFD for what is not). */
export function keyText(key: string): string {
  return utf8.decode(fromByteKey(key));
}

/**
 * `name/<lease hex>` on that very lease (core/queue/layout.ts waiterKey): what every contender of
 * etcd's Mutex and Election, the v3lock/v3election services and the SDK writes. A key of another
 * shape under a queue's prefix still counts in its order, as etcd's waitDeletes counts it.
 */
export function queueKeyOf(key: string, lease: bigint): QueueKey | undefined {
  if (lease === 0n) return undefined;
  const leaseHex = lease.toString(16);
  const suffix = `/${leaseHex}`;
  if (key.length <= suffix.length || !key.endsWith(suffix)) return undefined;
  const prefix = key.slice(0, key.length - leaseHex.length);
  return { name: keyText(prefix.slice(0, -1)), prefix, leaseHex };
}

/** The oldest key under `prefix` by create revision (the holder, ownerRange), if any. */
export function queueHead(machine: EtcdMachine, prefix: string): KeyValue | undefined {
  const key = fromByteKey(prefix);
  const r = machine.range({
    key,
    rangeEnd: prefixEnd(key),
    sortTarget: 'CREATE',
    sortOrder: 'ASCEND',
    limit: 1,
  });
  return 'kvs' in r ? r.kvs[0] : undefined;
}

export class MemberFeed {
  private readonly clock: Clock;
  private readonly suspicion: PeerSuspicion;
  private readonly wallMs: () => number;
  private member: Member | undefined;
  private peers: PeerChannel | undefined;
  private readonly listeners = new Set<FeedListener>();
  private readonly changes: LeaderChange[] = [];
  private readonly samples: Sample[] = [];
  /** [wall ms, revision] pairs, oldest first. */
  private readonly revisionTimes: (readonly [number, number])[] = [];
  private readonly pendingHeartbeat = new Map<NodeId, { sentMs: number; context: number }>();
  private readonly rtts = new Map<NodeId, Rtt>();
  private readonly links = new Map<NodeId, PeerLink>();
  private readonly silences = new Map<NodeId, Silence>();
  private lastSoft: SoftState | undefined;
  private lockWatch: LockWatch | undefined;
  private stopSampler: Cancel | undefined;
  /** Wall-clock ms when this member started. */
  readonly startedAt: number;

  constructor(options: MemberFeedOptions) {
    this.clock = options.clock;
    this.suspicion = options.suspicion;
    this.wallMs = options.wallMs ?? Date.now;
    this.startedAt = this.wallMs();
  }

  // ---- Hooks the server's composition root (node.ts) wires in ----

  /** Told of the replica's soft state and applied entries (leader changes, lease events). */
  readonly observer: ReplicaObserver = {
    onSoftState: (_id, s) => this.onSoftState(s),
    onApplied: (_id, e, result) => {
      if (this.listeners.size === 0) return;
      const type = (result as { readonly type?: unknown } | undefined)?.type;
      if (type === 'leaseGrant') {
        const r = (result as { response: { id: bigint; ttlSeconds: number } }).response;
        this.emit({
          type: 'lease',
          at: this.wallMs(),
          action: 'granted',
          id: leaseIdText(r.id),
          ttlSeconds: r.ttlSeconds,
        });
      } else if (type === 'leaseRevoke') {
        const cmd = decodeEtcdEntry(e.data);
        // A conditional revoke that a renewal beat leaves the lease in place.
        if (cmd?.type !== 'leaseRevoke' || this.member?.machine.leaseInfo(cmd.id) !== undefined)
          return;
        this.emit({
          type: 'lease',
          at: this.wallMs(),
          action: cmd.ifExpiredAtMs === undefined ? 'revoked' : 'expired',
          id: leaseIdText(cmd.id),
          ttlSeconds: null,
        });
      }
    },
  };

  /** The Raft transport, with the heartbeats this member sends timed (leaders send them). */
  watchTransport(t: Transport): Transport {
    return {
      send: (m) => {
        if (m.type === 'heartbeat') this.heartbeatSent(m.to, m.context);
        t.send(m);
      },
      ...(t.flush === undefined ? {} : { flush: () => t.flush?.() }),
    };
  }

  /** A Raft message from a peer, before the member sees it. */
  messageIn(m: Message): void {
    if (m.type === 'heartbeatResp') this.heartbeatAnswered(m.from, m.context);
  }

  /** The peer transport's events: connections made and lost. */
  peerEvent(e: PeerEvent): void {
    if (e.type === 'connected')
      this.links.set(e.peer, { connected: true, since: this.wallMs(), error: null });
    else if (e.type === 'disconnected')
      this.links.set(e.peer, { connected: false, since: this.wallMs(), error: e.error ?? null });
  }

  /** The member exists: start sampling. */
  attach(member: Member, peers: PeerChannel): void {
    this.member = member;
    this.peers = peers;
    this.onSoftState(member.replica.raft.softState());
    this.stopSampler = this.clock.every(SAMPLE_INTERVAL_MS, () => this.sample());
  }

  stop(): void {
    this.stopSampler?.();
    this.stopSampler = undefined;
    this.lockWatch?.close();
    this.lockWatch = undefined;
    this.listeners.clear();
  }

  // ---- What the dashboard reads ----

  get attachedMember(): Member | undefined {
    return this.member;
  }

  get peerChannel(): PeerChannel | undefined {
    return this.peers;
  }

  leaderChanges(): readonly LeaderChange[] {
    return this.changes;
  }

  recentSamples(): readonly Sample[] {
    return this.samples;
  }

  rtt(peer: NodeId): Rtt | undefined {
    const r = this.rtts.get(peer);
    return r && { ...r, lastMs: round2(r.lastMs), smoothedMs: round2(r.smoothedMs) };
  }

  link(peer: NodeId): PeerLink | undefined {
    return this.links.get(peer);
  }

  /**
   * Ms since anything arrived from `peer`, its φ and its band. A follower hears only from the
   * leader (followers exchange nothing in Raft), so for other peers silence means nothing: 'n/a'.
   */
  silenceOf(peer: NodeId): {
    readonly silentMs: number | null;
    readonly phi: number | null;
    readonly silence: Silence;
  } {
    const raft = this.member?.replica.raft;
    const heard = this.peers?.heard(peer);
    const now = this.clock.nowMs();
    const silentMs = heard === undefined ? null : Math.max(0, now - heard.localMs);
    const expected = raft !== undefined && hearsFrom(raft, peer);
    if (!expected) return { silentMs, phi: null, silence: 'n/a' };
    const phi = this.suspicion.phi(peer, now);
    if (phi === undefined) return { silentMs, phi: null, silence: 'suspect' };
    return { silentMs, phi: round2(phi), silence: suspicionOf(phi) };
  }

  /**
   * When revision `rev` existed at the latest, by the sampler's log: the wall-clock ms of the
   * first reading at or past it (`exact` false: the revision may be up to a sample older), or
   * undefined when the log does not reach back to it.
   */
  timeOfRevision(rev: number): number | undefined {
    const log = this.revisionTimes;
    const first = log[0];
    if (first === undefined || first[1] >= rev) return undefined;
    let lo = 0;
    let hi = log.length - 1;
    if ((log[hi] as readonly [number, number])[1] < rev) return undefined;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((log[mid] as readonly [number, number])[1] >= rev) hi = mid;
      else lo = mid + 1;
    }
    return (log[lo] as readonly [number, number])[0];
  }

  /** Wall-clock ms of the oldest revision reading, if any. */
  get revisionLogStart(): number | undefined {
    return this.revisionTimes[0]?.[0];
  }

  /** Wall-clock ms when this member saw `key` (a ByteKey) take its queue's head, if it did. */
  acquiredAt(key: string): number | undefined {
    return this.lockWatch?.acquiredAt(key);
  }

  /** Listen to every event; false when too many listen already. */
  subscribe(listener: FeedListener): (() => void) | undefined {
    if (this.listeners.size >= FEED_LISTENERS_MAX) return undefined;
    this.listeners.add(listener);
    if (this.member !== undefined && this.lockWatch === undefined)
      this.lockWatch = new LockWatch(this.member.machine, this.wallMs, (e) => this.emit(e));
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.lockWatch?.close();
        this.lockWatch = undefined;
      }
    };
  }

  // ---- Inside ----

  private emit(e: FeedEvent): void {
    for (const l of [...this.listeners]) l(e);
  }

  private onSoftState(s: SoftState): void {
    const prev = this.lastSoft;
    this.lastSoft = s;
    const at = this.wallMs();
    if (prev === undefined || prev.role !== s.role || prev.term !== s.term)
      this.emit({ type: 'role', at, role: s.role, term: s.term });
    if (
      prev === undefined ||
      prev.leader !== s.leader ||
      (prev.term !== s.term && s.leader !== NONE)
    ) {
      const change = { term: s.term, leader: s.leader === NONE ? null : hexId(s.leader), at };
      const last = this.changes[this.changes.length - 1];
      if (last?.leader !== change.leader || last.term !== change.term) {
        this.changes.push(change);
        if (this.changes.length > LEADER_CHANGES_MAX) this.changes.shift();
        this.emit({ type: 'leader', ...change });
      }
    }
    if (s.role !== 'leader') this.pendingHeartbeat.clear();
  }

  private heartbeatSent(to: NodeId, context: number): void {
    const now = this.clock.nowMs();
    const pending = this.pendingHeartbeat.get(to);
    // One heartbeat timed at a time per peer: its answer is the next heartbeatResp with the same
    // context (per-link order holds, peer-transport.ts). A lost one is given up after a bound.
    if (pending !== undefined && now - pending.sentMs < RTT_PENDING_MAX_MS) return;
    this.pendingHeartbeat.set(to, { sentMs: now, context });
  }

  private heartbeatAnswered(from: NodeId, context: number): void {
    const pending = this.pendingHeartbeat.get(from);
    if (pending === undefined || pending.context !== context) return;
    this.pendingHeartbeat.delete(from);
    const ms = this.clock.nowMs() - pending.sentMs;
    const prev = this.rtts.get(from);
    const smoothedMs =
      prev === undefined ? ms : prev.smoothedMs + SRTT_ALPHA * (ms - prev.smoothedMs);
    this.rtts.set(from, {
      lastMs: ms,
      smoothedMs,
      samples: (prev?.samples ?? 0) + 1,
      at: this.wallMs(),
    });
  }

  private sample(): void {
    const member = this.member;
    if (member === undefined) return;
    const raft = member.replica.raft;
    const at = this.wallMs();
    const revision = member.machine.revision;
    const lastRev = this.revisionTimes[this.revisionTimes.length - 1];
    if (lastRev === undefined || lastRev[1] !== revision) {
      this.revisionTimes.push([at, revision]);
      if (this.revisionTimes.length > REVISION_TIMES_MAX) this.revisionTimes.shift();
    }
    const progress = raft.role === 'leader' ? raft.progressView() : undefined;
    const last = raft.log.lastIndex();
    const peers: PeerSample[] = [];
    for (const info of member.members()) {
      const id = Number(info.id) as NodeId;
      if (id === member.id) continue;
      const pr = progress?.get(id);
      const { silentMs, phi, silence } = this.silenceOf(id);
      const rtt = raft.role === 'leader' ? this.rtts.get(id) : undefined;
      peers.push({
        id: hexId(id),
        lag: pr === undefined ? null : Math.max(0, last - pr.match),
        rttMs: rtt === undefined ? null : round2(rtt.lastMs),
        silentMs: silentMs === null ? null : Math.round(silentMs),
      });
      if (this.silences.get(id) !== silence) {
        this.silences.set(id, silence);
        this.emit({
          type: 'peer',
          at,
          peer: hexId(id),
          silence,
          silentMs: silentMs === null ? null : Math.round(silentMs),
          phi,
        });
      }
    }
    const s: Sample = {
      at,
      term: raft.term,
      leader: raft.leader === NONE ? null : hexId(raft.leader),
      commit: raft.log.committed,
      applied: raft.log.applied,
      revision,
      peers,
    };
    this.samples.push(s);
    if (this.samples.length > SAMPLES_MAX) this.samples.shift();
    this.emit({ type: 'sample', ...s });
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/**
 * Lock and election hand-overs, from a watch hub over the whole key space (prev_kv on, so that
 * a delete names the lease it was on): a new queue key is `queued`, or `acquired` when nothing
 * older is under its prefix; a deleted one is `released` when it was the head (then the next one
 * is `acquired`), else `withdrawn`.
 */
class LockWatch {
  private readonly hub: WatchHub;
  private scheduled: NodeJS.Immediate | undefined;
  /** prefix → the head's key and when this member saw it take the head (wall ms). */
  private readonly heads = new Map<string, { key: string; at: number }>();
  private closed = false;

  constructor(
    private readonly machine: EtcdMachine,
    private readonly wallMs: () => number,
    private readonly emit: (e: FeedEvent) => void,
  ) {
    this.hub = machine.openWatchHub();
    // The hub is told inside apply: only schedule the drain there.
    this.hub.onChange = () => {
      this.scheduled ??= setImmediate(() => {
        this.scheduled = undefined;
        this.drain();
      });
    };
    this.hub.create({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), prevKv: true });
    this.drain();
  }

  acquiredAt(key: string): number | undefined {
    for (const h of this.heads.values()) if (h.key === key) return h.at;
    return undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.machine.closeWatchHub(this.hub);
  }

  private drain(): void {
    if (this.closed) return;
    for (const r of this.hub.drain()) {
      for (const e of r.events) this.onEvent(e, r.header.revision);
    }
  }

  private onEvent(e: WatchEvent, revision: number): void {
    const kv = e.type === 'PUT' ? e.kv : e.prevKv;
    // Most writes are on no lease: no queue key, and no key conversion for them.
    if (kv === undefined || kv.lease === 0n) return;
    const key = toByteKey(kv.key);
    const q = queueKeyOf(key, kv.lease);
    if (q === undefined) return;
    // A put on an existing key (an election's proclaim) changes nobody's place.
    if (e.type === 'PUT' && kv.version !== 1) return;
    const head = queueHead(this.machine, q.prefix);
    const headKey = head === undefined ? undefined : toByteKey(head.key);
    const at = this.wallMs();
    const event = (action: LockAction, k: string, lease: string, token: number): void =>
      this.emit({
        type: 'lock',
        at,
        action,
        name: q.name,
        key: keyText(k),
        lease,
        token,
        revision,
      });
    if (e.type === 'PUT') {
      if (headKey === key) {
        this.setHead(q.prefix, key, at);
        event('acquired', key, leaseIdText(kv.lease), kv.createRevision);
      } else event('queued', key, leaseIdText(kv.lease), kv.createRevision);
      return;
    }
    const wasHead = head === undefined || head.createRevision > kv.createRevision;
    if (!wasHead) {
      event('withdrawn', key, leaseIdText(kv.lease), kv.createRevision);
      return;
    }
    this.heads.delete(q.prefix);
    event('released', key, leaseIdText(kv.lease), kv.createRevision);
    if (head !== undefined && headKey !== undefined) {
      this.setHead(q.prefix, headKey, at);
      event('acquired', headKey, leaseIdText(head.lease), head.createRevision);
    }
  }

  private setHead(prefix: string, key: string, at: number): void {
    this.heads.delete(prefix);
    this.heads.set(prefix, { key, at });
    if (this.heads.size > LOCK_QUEUES_TRACKED_MAX) {
      const oldest = this.heads.keys().next().value;
      if (oldest !== undefined) this.heads.delete(oldest);
    }
  }
}
