// The server's composition root for one member: the member (src/replica/member, the code the
// simulator also runs) wired to real I/O — the data directory (identity files, the file WAL with
// fdatasync per batch and fail-stop), the TCP peer transport, the process's monotonic clock and a
// fresh random seed per run. Nothing here decides anything about Raft, leases or requests.
import type { Mutants } from '../core/base/mutants.js';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert } from '../core/base/assert.js';
import { nodeId, type NodeId } from '../core/base/units.js';
import type { Clock } from '../replica/io.js';
import type { LeaderDetectorKind } from '../replica/leader-watch.js';
import { Member } from '../replica/member/member.js';
import {
  MEMBER_DEFAULTS,
  type InitialMember,
  type MemberLog,
} from '../replica/member/member-config.js';
import {
  clusterIdOf,
  hexId,
  JOINED_MEMBER_TOKEN,
  memberIdOf,
} from '../replica/member/member-id.js';
import { monotonicClock } from './clock.js';
import { FileDisk } from './file-disk.js';
import { MemberMetrics } from './metrics/member-metrics.js';
import { MeteredDisk } from './metrics/metered-disk.js';
import { PeerSuspicion } from './peer-suspicion.js';
import { PeerTransport, type PeerAddress, type PeerEvent } from './peer-transport.js';
import type { PeerTls } from './peer-tls.js';
import { MemberFeed } from './ui/member-feed.js';
import type { ReplicaObserver } from '../replica/replica.js';

export type { InitialMember };
export type NodeLogger = MemberLog;

export interface NodeConfig {
  readonly name: string;
  readonly dataDir: string;
  /** Where peers reach us (the address we listen on for peers). */
  readonly listenPeer: PeerAddress;
  /** TLS between members (https:// peer URLs); plain TCP without. */
  readonly peerTls?: PeerTls;
  /** Advertised to clients in MemberList. */
  readonly advertiseClientUrls: readonly string[];
  readonly initialCluster: readonly InitialMember[];
  readonly initialClusterState: 'new' | 'existing';
  readonly initialClusterToken: string;
  /** etcd's --heartbeat-interval and --election-timeout, in ms. */
  readonly heartbeatMs: number;
  readonly electionMs: number;
  /**
   * `--pause-tolerance`: a leader pause this long causes no election; default 1.5 × electionMs,
   * 0 for etcd's behaviour (member-config.ts).
   */
  readonly pauseToleranceMs?: number;
  /** `--leader-detector`: phi (default) or fixed (leader-watch.ts). */
  readonly leaderDetector?: LeaderDetectorKind;
  /** Entries applied between snapshots (etcd's --snapshot-count). */
  readonly snapshotCount: number;
  /** How long a request may wait for a leader, a forward or a commit. */
  readonly requestTimeoutMs: number;
  /** Lease checkpoints (member-config.ts); on unless false. */
  readonly leaseCheckpoint?: boolean;
  readonly log: NodeLogger;
  readonly clock?: Clock;
  /** Planted bugs (planted-bugs.ts); none unless a test asks. */
  readonly mutants?: Mutants;
}

export const NODE_DEFAULTS = MEMBER_DEFAULTS;

/** Host and port of an http:// or https:// URL, as the peer transport wants them. */
export function urlAddress(url: string): PeerAddress {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/** The file in the data dir that records which cluster the member belongs to. */
export const CLUSTER_ID_FILE = 'cluster-id';
/** The member ID the data dir was created for; a restart that derives another is refused. */
export const MEMBER_ID_FILE = 'member-id';
/** A fresh seed per run of the process, below 2^47 (exact in a float64). */
const RUN_SEED_MAX = 2 ** 47;
/** The process exit code of a member whose disk failed (fail-stop; sysexits' EX_SOFTWARE). */
const EXIT_DISK_FAILURE = 70;
/**
 * The process exit code of a member that met a log entry in a record format it does not read
 * (sysexits' EX_DATAERR): it must be upgraded before it can go on.
 */
const EXIT_LOG_FORMAT = 65;

/**
 * This member's ID. The data dir's record wins once it exists (a restart keeps its identity
 * whatever the flags say). A first start computes it as etcd does for a bootstrap member, from
 * the peer URLs and --initial-cluster-token; a member joining an existing cluster computes it
 * from its peer URLs alone, as MemberAdd did, since `etcdctl member add` prints no token.
 */
function resolveMemberId(cfg: NodeConfig, peerUrls: readonly string[]): NodeId {
  const file = join(cfg.dataDir, MEMBER_ID_FILE);
  if (existsSync(file)) {
    const recorded = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{1,12}$/.test(recorded))
      throw new Error(`${file} is damaged ('${recorded}'); restore it or use a fresh --data-dir`);
    return nodeId(parseInt(recorded, 16));
  }
  const id =
    cfg.initialClusterState === 'new'
      ? memberIdOf(peerUrls, cfg.initialClusterToken)
      : memberIdOf(peerUrls, JOINED_MEMBER_TOKEN);
  mkdirSync(cfg.dataDir, { recursive: true });
  writeFileSync(file, `${hexId(id)}\n`);
  return id;
}

export class EtcdNode {
  private cid: bigint;
  readonly member!: Member;
  /** What /metrics serves for this member (src/server/metrics). */
  readonly metrics: MemberMetrics;
  /** What the dashboard (/ui) records as it happens: leader changes, round trips, events. */
  readonly feed: MemberFeed;
  /** φ per peer from the batches that arrive (observation: metrics, dashboard, status). */
  readonly suspicion: PeerSuspicion;
  private readonly id: NodeId;
  private readonly selfPeerUrls: readonly string[];
  private transport: PeerTransport | undefined;
  private disk: FileDisk | undefined;
  private readonly initialIds: ReadonlyMap<NodeId, InitialMember>;
  private stopping: Promise<void> | undefined;

  private constructor(private readonly cfg: NodeConfig) {
    const self = cfg.initialCluster.find((m) => m.name === cfg.name);
    if (!self)
      throw new Error(`--initial-cluster has no member named '${cfg.name}' (--name must be one)`);
    this.selfPeerUrls = self.peerUrls;
    this.id = resolveMemberId(cfg, self.peerUrls);
    const ids = new Map<NodeId, InitialMember>();
    for (const m of cfg.initialCluster) {
      const id = memberIdOf(m.peerUrls, cfg.initialClusterToken);
      if (ids.has(id)) throw new Error(`--initial-cluster lists peer URLs ${m.peerUrls[0]} twice`);
      ids.set(id, m);
    }
    this.initialIds = ids;
    this.cid = clusterIdOf([...ids.keys()], cfg.initialClusterToken);
    const clock = cfg.clock ?? monotonicClock;
    this.suspicion = new PeerSuspicion(cfg.heartbeatMs);
    this.metrics = new MemberMetrics({ heartbeatMs: cfg.heartbeatMs, nowMs: () => clock.nowMs() });
    this.feed = new MemberFeed({ clock, suspicion: this.suspicion });
  }

  /** Recover from the data directory, listen for peers and join the cluster. */
  static async start(cfg: NodeConfig): Promise<EtcdNode> {
    const n = new EtcdNode(cfg);
    try {
      await n.open();
    } catch (e) {
      // A damaged WAL or a member-ID mismatch: release the peer port and the files.
      n.disk?.close();
      await n.transport?.close();
      throw e;
    }
    return n;
  }

  private async open(): Promise<void> {
    const cfg = this.cfg;
    const log = cfg.log;
    const peers = new Map<NodeId, PeerAddress>();
    for (const [id, m] of this.initialIds) {
      const url = m.peerUrls[0];
      assert(url !== undefined, 'member without peer URL');
      peers.set(id, urlAddress(url));
    }
    // The cluster ID is fixed when the data dir is first used: computed from --initial-cluster
    // for a new cluster, adopted from the cluster for a member that joins an existing one.
    const idFile = join(cfg.dataDir, CLUSTER_ID_FILE);
    mkdirSync(cfg.dataDir, { recursive: true });
    let known: string | undefined;
    if (existsSync(idFile)) {
      known = readFileSync(idFile, 'utf8').trim();
      if (!/^[0-9a-f]+$/.test(known))
        throw new Error(
          `${idFile} is damaged ('${known}'); restore it or start with a fresh --data-dir`,
        );
    } else if (cfg.initialClusterState === 'new') {
      known = hexId(this.cid);
      writeFileSync(idFile, `${known}\n`);
    }
    this.cid = known === undefined ? 0n : BigInt(`0x${known}`);
    const holder: { member?: Member } = {};
    const clock = cfg.clock ?? monotonicClock;
    const transport = await PeerTransport.start({
      clusterId: known,
      onClusterId: (id) => {
        this.cid = BigInt(`0x${id}`);
        writeFileSync(idFile, `${id}\n`);
        log.info({ clusterId: id }, 'joined cluster');
      },
      self: this.id,
      listen: cfg.listenPeer,
      advertise: urlAddress(
        this.selfPeerUrls[0] ?? `http://${cfg.listenPeer.host}:${cfg.listenPeer.port}`,
      ),
      peers,
      nowMs: () => clock.nowMs(),
      onMessage: (m) => {
        this.feed.messageIn(m);
        holder.member?.receiveMessage(m);
      },
      onApp: (from, payload) => holder.member?.receiveFrame(from, payload),
      onEvent: (e) => {
        this.feed.peerEvent(e);
        logPeerEvent(log, e);
        // A refused dial is evidence that the peer's process is gone (issue 19).
        if (e.type === 'unreachable') holder.member?.peerUnreachable(e.peer);
      },
      onRoundTrip: (peer, ms) => this.metrics.roundTrip(peer, ms),
      onHeard: (peer, localMs) => this.suspicion.heard(peer, localMs),
      ...(cfg.peerTls === undefined ? {} : { tls: cfg.peerTls }),
    });
    this.transport = transport;
    const disk = new FileDisk(cfg.dataDir, {
      onFatal: (e) => {
        log.error({ err: e.message }, 'disk failure; stopping (fail-stop)');
        process.exit(EXIT_DISK_FAILURE);
      },
    });
    this.disk = disk;
    const metered = new MeteredDisk(disk);
    const member = new Member(
      {
        name: cfg.name,
        id: this.id,
        clusterId: () => this.cid,
        // A joining member (state "existing") starts with no configuration and learns it from
        // the leader's log or snapshot.
        initialConf:
          cfg.initialClusterState === 'new'
            ? { voters: [...this.initialIds.keys()], learners: [] }
            : { voters: [], learners: [] },
        initialMembers: this.initialIds,
        peerUrls: this.selfPeerUrls,
        advertiseClientUrls: cfg.advertiseClientUrls,
        heartbeatMs: cfg.heartbeatMs,
        electionMs: cfg.electionMs,
        ...(cfg.pauseToleranceMs === undefined ? {} : { pauseToleranceMs: cfg.pauseToleranceMs }),
        ...(cfg.leaderDetector === undefined ? {} : { leaderDetector: cfg.leaderDetector }),
        snapshotCount: cfg.snapshotCount,
        requestTimeoutMs: cfg.requestTimeoutMs,
        ...(cfg.leaseCheckpoint === undefined ? {} : { leaseCheckpoint: cfg.leaseCheckpoint }),
        ...(cfg.mutants === undefined ? {} : { mutants: cfg.mutants }),
        // Election jitter, read contexts and request IDs must differ per run of the process.
        seed: randomInt(1, RUN_SEED_MAX),
      },
      {
        clock,
        transport: this.metrics.heartbeats.watch(this.feed.watchTransport(transport)),
        peers: transport.channel,
        disk: metered,
        log,
        // The member logged the entry's index and format already.
        fatal: () => process.exit(EXIT_LOG_FORMAT),
        observer: bothObservers(this.metrics.observer(), this.feed.observer),
      },
    );
    holder.member = member;
    this.metrics.attach({ member, transport, disk: metered, suspicion: this.suspicion });
    (this as { member: Member }).member = member;
    this.feed.attach(member, transport.channel);
    // Members added at run time become peers; the table recovered from the data dir too.
    const warned = new Set<string>();
    const syncPeers = (): void => {
      for (const rec of member.memberTable().values()) {
        const url = rec.peerUrls[0];
        if (url === undefined) continue;
        // A member added (MemberAdd) with the other kind of peer URL cannot be talked to: every
        // member's peer port speaks TLS or none does (peer-transport.ts).
        if (url.startsWith('https:') !== (cfg.peerTls !== undefined) && !warned.has(url)) {
          warned.add(url);
          log.error(
            { member: rec.name, peerUrl: url, peerTls: cfg.peerTls !== undefined },
            'member has a peer URL of the other kind (http:// and https:// do not mix): ' +
              'it cannot be reached',
          );
        }
        transport.addPeer(Number(rec.id) as NodeId, urlAddress(url));
      }
    };
    member.onMemberTableChange(syncPeers);
    syncPeers();
    log.info(
      {
        name: cfg.name,
        memberId: hexId(member.memberId),
        clusterId: hexId(this.cid),
        appliedIndex: member.appliedIndex,
        revision: member.machine.revision,
      },
      'member started',
    );
  }

  get name(): string {
    return this.cfg.name;
  }

  get isLeader(): boolean {
    return this.member.isLeader;
  }

  /** Stop taking part: answer what waits, then close the disk and the peer transport. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.feed.stop();
      this.member.stop();
      this.disk?.close();
      await this.transport?.close();
    })();
    return this.stopping;
  }
}

function logPeerEvent(log: NodeLogger, e: PeerEvent): void {
  if (e.type === 'refused') log.warn({ reason: e.reason }, 'peer connection refused');
  else if (e.type === 'dropped')
    log.warn({ peer: hexId(e.peer), messages: e.messages }, 'peer messages dropped');
  else if (e.type === 'stalled')
    log.warn({ peer: hexId(e.peer), messages: e.messages }, 'peer connection stalled; reset');
  else if (e.type === 'snapshotSent')
    log.info({ peer: hexId(e.peer), bytes: e.bytes }, 'snapshot sent');
  else if (e.type === 'snapshotReceived')
    log.info({ peer: hexId(e.peer), bytes: e.bytes }, 'snapshot received');
  else if (e.type === 'snapshotFailed')
    log.warn({ peer: hexId(e.peer), err: e.error }, 'sending a snapshot failed');
  else if (e.type === 'refusedBy')
    log.warn({ peer: hexId(e.peer), reason: e.reason }, 'peer refused this member');
  else if (e.type === 'tlsFailed')
    log.warn(
      {
        direction: e.direction,
        ...(e.peer === undefined ? {} : { peer: hexId(e.peer) }),
        ...(e.remote === undefined ? {} : { remote: e.remote }),
        err: e.error,
        failures: e.failures,
        hint:
          'a peer with plain http:// peer URLs, a certificate from another CA, or one ' +
          "without the peer URL's host in its SANs",
      },
      'peer TLS handshake failed',
    );
}

/** Both observers told of every event, `a` first (the metrics and the dashboard's feed). */
function bothObservers(a: ReplicaObserver, b: ReplicaObserver): ReplicaObserver {
  const out: Record<string, (...args: unknown[]) => void> = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const fa = (a as Record<string, ((...args: unknown[]) => void) | undefined>)[key];
    const fb = (b as Record<string, ((...args: unknown[]) => void) | undefined>)[key];
    out[key] = (...args: unknown[]): void => {
      fa?.(...args);
      fb?.(...args);
    };
  }
  return out;
}
