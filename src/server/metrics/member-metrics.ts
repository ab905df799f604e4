// One member's /metrics: etcd's families with etcd's names, types, labels and buckets (read from
// etcd 3.4.23's own /metrics and its sources: etcdserver/metrics.go, mvcc/metrics.go,
// wal/metrics.go, mvcc/backend/metrics.go, etcdserver/api/rafthttp/metrics.go, lease/metrics.go,
// go-grpc-prometheus), for everything tenure has an equivalent of, then tenure's own under
// `tenure_`, then the process's. docs/operations.md ("Metrics") lists them with what each maps to.
//
// A registry per member, not prom-client's global one: tests run several members in one process.
// Nearly every value is read at scrape time from counters the member already keeps or bumps as
// plain numbers (families.ts); histograms count into arrays (histogram.ts).
import { Registry } from 'prom-client';
import type { NodeId } from '../../core/base/units.js';
import { NONE } from '../../core/base/units.js';
import { queuePrefix } from '../../core/queue/layout.js';
import { prefixEnd } from '../../core/state/key-range.js';
import type { Entry } from '../../core/raft/types.js';
import type { ReplicaObserver } from '../../replica/replica.js';
import { SERVER_VERSION } from '../../replica/member/backend.js';
import type { Member } from '../../replica/member/member.js';
import { hexId } from '../../replica/member/member-id.js';
import type { ClientApiMetrics, MetricsText } from '../api/api-metrics.js';
import { LockNames } from '../api/lock-names.js';
import { GRPC_CODE_NAMES, RpcStats, type MethodStats } from '../api/rpc-stats.js';
import type { PeerTraffic, PeerTransport } from '../peer-transport.js';
import { counter, counters, gauge, gauges, type Sample } from './families.js';
import { HeartbeatWatch } from './heartbeats.js';
import { Buckets, BucketsByLabels, BucketsHistogram, exponentialBuckets } from './histogram.js';
import { hearsFrom, type PeerSuspicion } from '../peer-suspicion.js';
import type { MeteredDisk } from './metered-disk.js';
import { processRegistry } from './process-metrics.js';

/** An apply slower than this is counted (etcd's warnApplyDuration, etcdserver/util.go). */
export const SLOW_APPLY_MS = 100;
/** etcd's RTT bounds: 0.1 ms to about 1.6 s, doubling (rafthttp/metrics.go). */
const PEER_RTT_BUCKETS_SECONDS = exponentialBuckets(0.0001, 2, 14);
/** Keepalive latency: 0.5 ms to about 4 s, doubling (a renewal waits for a quorum round). */
const KEEPALIVE_BUCKETS_SECONDS = exponentialBuckets(0.0005, 2, 14);

/** What the families read; attached once the member exists. */
export interface MetricsSources {
  readonly member: Member;
  readonly transport: PeerTransport;
  readonly disk: MeteredDisk;
  readonly suspicion: PeerSuspicion;
}

export interface MemberMetricsOptions {
  /** etcd's --heartbeat-interval, for the heartbeat send check (heartbeats.ts). */
  readonly heartbeatMs: number;
  readonly nowMs: () => number;
}

export class MemberMetrics implements ClientApiMetrics {
  readonly registry = new Registry();
  readonly rpc = new RpcStats();
  readonly locks = new LockNames();
  readonly heartbeats: HeartbeatWatch;
  readonly peerRoundTrip = new BucketsByLabels(PEER_RTT_BUCKETS_SECONDS);
  readonly keepAlive = new Buckets(KEEPALIVE_BUCKETS_SECONDS);
  leaderChanges = 0;
  slowApplies = 0;
  private src: MetricsSources | undefined;
  private applyStartMs = 0;

  constructor(opts: MemberMetricsOptions) {
    this.heartbeats = new HeartbeatWatch(opts.heartbeatMs, opts.nowMs);
    this.register();
  }

  /** Start reading `src`; the member's own hooks are set here. */
  attach(src: MetricsSources): void {
    this.src = src;
    src.member.stats.onKeepAliveMs = (ms) => this.keepAlive.observe(ms / 1000);
    src.member.onLeaderChange((leader) => {
      // etcd counts a change to a known leader other than the last one (etcdserver/raft.go).
      if (leader !== 0n) this.leaderChanges++;
    });
  }

  /** A peer round trip measured by the transport (peer-transport.ts, the acknowledgement). */
  roundTrip(peer: NodeId, ms: number): void {
    const to = hexId(peer);
    this.peerRoundTrip.of(to, { To: to }).observe(ms / 1000);
  }

  /** What the replica tells the server: each apply's duration, and soft-state changes. */
  observer(): ReplicaObserver {
    return {
      onApply: () => {
        this.applyStartMs = performance.now();
      },
      onApplied: (_id: NodeId, _e: Entry) => {
        if (performance.now() - this.applyStartMs > SLOW_APPLY_MS) this.slowApplies++;
      },
      onSoftState: () => this.heartbeats.reset(),
    };
  }

  async scrape(): Promise<MetricsText> {
    const [own, proc] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return { contentType: this.registry.contentType, body: `${own}\n${proc}` };
  }

  private register(): void {
    const r = this.registry;
    const m = (): Member | undefined => this.src?.member;
    const one = (f: (member: Member) => number) => (): number => {
      const member = m();
      return member === undefined ? 0 : f(member);
    };
    const labelled = (f: (src: MetricsSources) => Iterable<Sample>) => (): Iterable<Sample> =>
      this.src === undefined ? [] : f(this.src);

    // ---- etcd server (etcdserver/metrics.go) ----
    gauge(
      r,
      'etcd_server_has_leader',
      'Whether or not a leader exists. 1 is existence, 0 is not.',
      one((x) => (x.hasLeader() ? 1 : 0)),
    );
    gauge(
      r,
      'etcd_server_is_leader',
      'Whether or not this member is a leader. 1 if is, 0 otherwise.',
      one((x) => (x.isLeader ? 1 : 0)),
    );
    gauge(
      r,
      'etcd_server_is_learner',
      'Whether or not this member is a learner. 1 if is, 0 otherwise.',
      one((x) => (x.status().isLearner ? 1 : 0)),
    );
    counter(
      r,
      'etcd_server_leader_changes_seen_total',
      'The number of leader changes seen.',
      () => this.leaderChanges,
    );
    counter(
      r,
      'etcd_server_heartbeat_send_failures_total',
      'The total number of leader heartbeat send failures (likely overloaded from slow disk).',
      () => this.heartbeats.failures,
    );
    counter(
      r,
      'etcd_server_slow_apply_total',
      'The total number of slow apply requests (likely overloaded from slow disk).',
      () => this.slowApplies,
    );
    // Gauges in etcd, whatever their names say: the committed and applied indexes.
    gauge(
      r,
      'etcd_server_proposals_committed_total',
      'The total number of consensus proposals committed.',
      one((x) => x.replica.raft.log.committed),
    );
    gauge(
      r,
      'etcd_server_proposals_applied_total',
      'The total number of consensus proposals applied.',
      one((x) => x.replica.raft.log.applied),
    );
    gauge(
      r,
      'etcd_server_proposals_pending',
      'The current number of pending proposals to commit.',
      one((x) => x.stats.proposalsPending),
    );
    counter(
      r,
      'etcd_server_proposals_failed_total',
      'The total number of failed proposals seen.',
      one((x) => x.stats.proposalsFailed),
    );
    gauge(
      r,
      'etcd_server_quota_backend_bytes',
      'Current backend storage quota size in bytes.',
      one((x) => x.machine.quotaBytes),
    );
    gauges(
      r,
      'etcd_server_id',
      "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.",
      ['server_id'],
      labelled((s) => [[{ server_id: hexId(s.member.memberId) }, 1]]),
    );
    gauges(
      r,
      'etcd_server_version',
      "Which version is running. 1 for 'server_version' label with current version.",
      ['server_version'],
      () => [[{ server_version: SERVER_VERSION }, 1]],
    );
    gauges(
      r,
      'etcd_cluster_version',
      "Which version is running. 1 for 'cluster_version' label with current cluster version",
      ['cluster_version'],
      () => [[{ cluster_version: SERVER_VERSION.split('.').slice(0, 2).join('.') }, 1]],
    );

    // ---- disk (wal/metrics.go, mvcc/backend/metrics.go) ----
    new BucketsHistogram(
      r,
      'etcd_disk_wal_fsync_duration_seconds',
      'The latency distributions of fsync called by WAL.',
      () => (this.src === undefined ? [] : [{ labels: {}, buckets: this.src.disk.walFsync }]),
    );
    new BucketsHistogram(
      r,
      'etcd_disk_backend_commit_duration_seconds',
      'The latency distributions of commit called by backend.',
      () => (this.src === undefined ? [] : [{ labels: {}, buckets: this.src.disk.commit }]),
    );
    gauge(
      r,
      'etcd_disk_wal_write_bytes_total',
      'Total number of bytes written in WAL.',
      () => this.src?.disk.walBytes ?? 0,
    );

    // ---- mvcc (mvcc/metrics.go) ----
    for (const prefix of ['etcd_mvcc', 'etcd_debugging_mvcc']) {
      counter(
        r,
        `${prefix}_put_total`,
        'Total number of puts seen by this member.',
        one((x) => x.machine.counts.puts),
      );
      counter(
        r,
        `${prefix}_delete_total`,
        'Total number of deletes seen by this member.',
        one((x) => x.machine.counts.deletes),
      );
      counter(
        r,
        `${prefix}_range_total`,
        'Total number of ranges seen by this member.',
        one((x) => x.machine.counts.ranges),
      );
      counter(
        r,
        `${prefix}_txn_total`,
        'Total number of txns seen by this member.',
        one((x) => x.machine.counts.txns),
      );
    }
    for (const name of [
      'etcd_mvcc_db_total_size_in_bytes',
      'etcd_debugging_mvcc_db_total_size_in_bytes',
    ])
      gauge(
        r,
        name,
        'Total size of the underlying database physically allocated in bytes.',
        one((x) => x.machine.sizeBytes),
      );
    gauge(
      r,
      'etcd_mvcc_db_total_size_in_use_in_bytes',
      'Total size of the underlying database logically in use in bytes.',
      one((x) => x.machine.sizeBytes),
    );
    gauge(
      r,
      'etcd_debugging_mvcc_keys_total',
      'Total number of keys.',
      one((x) => x.machine.keyCount),
    );
    gauge(
      r,
      'etcd_debugging_mvcc_watcher_total',
      'Total number of watchers.',
      one((x) => x.machine.watcherCount),
    );
    gauge(
      r,
      'etcd_debugging_mvcc_current_revision',
      'The current revision of store.',
      one((x) => x.machine.revision),
    );
    gauge(
      r,
      'etcd_debugging_mvcc_compact_revision',
      'The revision of the last compaction in store.',
      // etcd reports -1 before the first compaction.
      one((x) => (x.machine.compactRevision === 0 ? -1 : x.machine.compactRevision)),
    );

    // ---- leases (lease/metrics.go) ----
    counter(
      r,
      'etcd_debugging_lease_granted_total',
      'The total number of granted leases.',
      one((x) => x.machine.counts.leasesGranted),
    );
    counter(
      r,
      'etcd_debugging_lease_revoked_total',
      'The total number of revoked leases.',
      one((x) => x.machine.counts.leasesRevoked),
    );
    counter(
      r,
      'etcd_debugging_lease_renewed_total',
      'The number of renewed leases seen by the leader.',
      one((x) => x.stats.leasesRenewed),
    );

    // ---- peers (etcdserver/api/rafthttp/metrics.go) ----
    const traffic = (pick: (t: PeerTraffic) => number, label: 'To' | 'From') =>
      labelled((s) =>
        [...s.transport.peerTraffic()].map(([id, t]): Sample => [{ [label]: hexId(id) }, pick(t)]),
      );
    counters(
      r,
      'etcd_network_peer_sent_bytes_total',
      'The total number of bytes sent to peers.',
      ['To'],
      traffic((t) => t.sentBytes, 'To'),
    );
    counters(
      r,
      'etcd_network_peer_received_bytes_total',
      'The total number of bytes received from peers.',
      ['From'],
      traffic((t) => t.receivedBytes, 'From'),
    );
    counters(
      r,
      'etcd_network_peer_sent_failures_total',
      'The total number of send failures from peers.',
      ['To'],
      traffic((t) => t.sendFailures, 'To'),
    );
    gauges(
      r,
      'etcd_network_active_peers',
      'The current number of active peer connections.',
      ['Local', 'Remote'],
      labelled((s) => {
        const local = hexId(s.member.memberId);
        return [...s.transport.peerTraffic()]
          .filter(([, t]) => t.connected)
          .map(([id]): Sample => [{ Local: local, Remote: hexId(id) }, 1]);
      }),
    );
    new BucketsHistogram(
      r,
      'etcd_network_peer_round_trip_time_seconds',
      'Round-Trip-Time histogram between peers',
      () => this.peerRoundTrip.series(),
    );

    // ---- gRPC (go-grpc-prometheus server_metrics.go) ----
    const rpcLabels = (s: MethodStats): Record<string, string> => ({
      grpc_method: s.method,
      grpc_service: s.service,
      grpc_type: s.type,
    });
    const perMethod = (pick: (s: MethodStats) => number) => (): Sample[] =>
      [...this.rpc.byPath.values()].map((s): Sample => [rpcLabels(s), pick(s)]);
    counters(
      r,
      'grpc_server_started_total',
      'Total number of RPCs started on the server.',
      ['grpc_method', 'grpc_service', 'grpc_type'],
      perMethod((s) => s.started),
    );
    // Every code of every method from the start, as go-grpc-prometheus registers them (so a
    // rate over a code that has not happened yet is 0, not absent).
    counters(
      r,
      'grpc_server_handled_total',
      'Total number of RPCs completed on the server, regardless of success or failure.',
      ['grpc_code', 'grpc_method', 'grpc_service', 'grpc_type'],
      () =>
        [...this.rpc.byPath.values()].flatMap((s) =>
          GRPC_CODE_NAMES.map((code, i): Sample => [
            { grpc_code: code, ...rpcLabels(s) },
            s.handled[i] ?? 0,
          ]),
        ),
    );
    counters(
      r,
      'grpc_server_msg_received_total',
      'Total number of RPC stream messages received on the server.',
      ['grpc_method', 'grpc_service', 'grpc_type'],
      perMethod((s) => s.received),
    );
    counters(
      r,
      'grpc_server_msg_sent_total',
      'Total number of gRPC stream messages sent by the server.',
      ['grpc_method', 'grpc_service', 'grpc_type'],
      perMethod((s) => s.sent),
    );
    new BucketsHistogram(
      r,
      'grpc_server_handling_seconds',
      'Histogram of response latency (seconds) of gRPC that had been application-level ' +
        'handled by the server.',
      () =>
        [...this.rpc.byPath.values()].map((s) => ({
          labels: rpcLabels(s),
          buckets: s.handling,
        })),
    );

    // ---- tenure's own ----
    gauges(
      r,
      'tenure_leases',
      "Leases by state on the leader's clock: active; expiring (under a third of the TTL left: " +
        'two renewals missed); expired (revoke due); unknown (not the leader: deadlines are on ' +
        'its clock).',
      ['state'],
      labelled((s) => {
        const c = s.member.leaseCensus();
        return [
          [{ state: 'active' }, c.active],
          [{ state: 'expiring' }, c.expiring],
          [{ state: 'expired' }, c.expired],
          [{ state: 'unknown' }, c.unknown],
        ];
      }),
    );
    new BucketsHistogram(
      r,
      'tenure_lease_keepalive_duration_seconds',
      'Time this member took to answer a lease keepalive (a quorum round on the leader, a ' +
        'forward from a follower).',
      () => [{ labels: {}, buckets: this.keepAlive }],
    );
    const locks = (): { holders: Sample[]; queued: Sample[]; tokens: Sample[] } => {
      const out = { holders: [] as Sample[], queued: [] as Sample[], tokens: [] as Sample[] };
      const member = m();
      if (member === undefined) return out;
      for (const lock of this.locks.entries()) {
        const prefix = queuePrefix(lock.name);
        const rows = member.machine.peek({ key: prefix, rangeEnd: prefixEnd(prefix) });
        const kvs = 'kvs' in rows ? rows.kvs : [];
        // The holder is the key created first (Go's concurrency.Mutex, waitDeletes): its create
        // revision is the fencing token.
        let token = 0;
        for (const kv of kvs)
          if (token === 0 || kv.createRevision < token) token = kv.createRevision;
        if (token > lock.lastToken) lock.lastToken = token;
        const labels = { lock: Buffer.from(lock.name).toString('utf8') };
        out.holders.push([labels, kvs.length > 0 ? 1 : 0]);
        out.queued.push([labels, Math.max(0, kvs.length - 1)]);
        if (lock.lastToken > 0) out.tokens.push([labels, lock.lastToken]);
      }
      return out;
    };
    gauges(
      r,
      'tenure_lock_holders',
      'Holders of each lock the Lock service here was asked for (0 or 1), from the key space.',
      ['lock'],
      () => locks().holders,
    );
    gauges(
      r,
      'tenure_lock_queue_length',
      'Callers waiting behind the holder of each lock, from the key space.',
      ['lock'],
      () => locks().queued,
    );
    gauges(
      r,
      'tenure_lock_fencing_token',
      "The newest fencing token seen for each lock: its holder key's create revision.",
      ['lock'],
      () => locks().tokens,
    );
    gauges(
      r,
      'tenure_peer_last_heard_seconds',
      'Seconds since this member last read a batch from each peer.',
      ['peer'],
      labelled((s) => {
        const now = s.member.clock.nowMs();
        const out: Sample[] = [];
        for (const id of s.transport.peerTraffic().keys()) {
          const heard = s.transport.heard(id);
          if (heard !== undefined) out.push([{ peer: hexId(id) }, (now - heard.localMs) / 1000]);
        }
        return out;
      }),
    );
    gauges(
      r,
      'tenure_peer_suspicion_phi',
      'Suspicion of each peer on the phi accrual scale (8: suspect), from the batches it sends; ' +
        'only for peers Raft expects to hear from (the leader hears every follower, a ' +
        'follower the leader). Observation: tenure_leader_silence_phi is what elections use.',
      ['peer'],
      labelled((s) => {
        const raft = s.member.replica.raft;
        const now = s.member.clock.nowMs();
        const out: Sample[] = [];
        for (const id of s.transport.peerTraffic().keys()) {
          if (!hearsFrom(raft, id)) continue;
          const phi = s.suspicion.phi(id, now);
          if (phi !== undefined) out.push([{ peer: hexId(id) }, phi]);
        }
        return out;
      }),
    );
    gauges(
      r,
      'tenure_leader_silence_phi',
      "A follower's suspicion of its leader on the phi scale, by the detector that starts an " +
        'election at 8 (--leader-detector, with --pause-tolerance added to the mean interval); ' +
        '0 on the leader, without a leader, or with --pause-tolerance 0.',
      ['peer'],
      labelled((s) => {
        const raft = s.member.replica.raft;
        if (raft.role !== 'follower' || raft.leader === NONE) return [];
        return [[{ peer: hexId(raft.leader) }, s.member.replica.leaderSilenceLevel()]];
      }),
    );
  }
}
