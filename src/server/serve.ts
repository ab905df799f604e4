// A whole member: the node (Raft, disk, peers) and the client API on its client URLs, with one
// stop for both. What `tenure start` runs, and what in-process tests can run too.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { WAL_FILE } from '../replica/wal.js';
import type { StartOptions } from './config.js';
import { EtcdNode, NODE_DEFAULTS, urlAddress, type NodeLogger } from './node.js';
import { startClientApi } from './api/client-listener.js';
import { startMetricsListener, type MetricsListener } from './metrics/metrics-listener.js';
import { withAutoTls } from './auto-tls.js';
import { peerTlsOptions } from './peer-tls.js';
import { createDashboard } from './ui/routes.js';

export interface RunningMember {
  readonly node: EtcdNode;
  /** Client URLs actually bound (a port 0 in the options becomes the chosen port). */
  readonly clientUrls: readonly string[];
  /** --listen-metrics-urls actually bound, in order. */
  readonly metricsUrls: readonly string[];
  /** Hand on leadership if this member leads, drain the client API, stop the node. */
  stop(): Promise<void>;
}

export async function serveMember(options: StartOptions, log: NodeLogger): Promise<RunningMember> {
  // --auto-tls, --peer-auto-tls: the certificates go in the data dir, made or reused.
  const opts = await withAutoTls(options, log);
  // etcd checks only a member that had data before this start (embed/etcd.go StartEtcd).
  const hadData = existsSync(join(opts.dataDir, WAL_FILE));
  // The node creates the data dir.
  const node = await EtcdNode.start({
    name: opts.name,
    dataDir: opts.dataDir,
    listenPeer: urlAddress(opts.listenPeerUrls[0] as string),
    ...(opts.peerTls === undefined ? {} : { peerTls: peerTlsOptions(opts.peerTls) }),
    advertiseClientUrls: opts.advertiseClientUrls,
    initialCluster: opts.initialCluster,
    initialClusterState: opts.initialClusterState,
    initialClusterToken: opts.initialClusterToken,
    heartbeatMs: opts.heartbeatMs,
    electionMs: opts.electionMs,
    snapshotCount: opts.snapshotCount,
    requestTimeoutMs: NODE_DEFAULTS.requestTimeoutMs,
    leaseCheckpoint: opts.leaseCheckpoint,
    log,
    ...(opts.mutants === undefined ? {} : { mutants: opts.mutants }),
  });
  // The dashboard (/ui) on every client URL, beside the gateway.
  const dashboard = createDashboard({
    member: node.member,
    feed: node.feed,
    heartbeatMs: opts.heartbeatMs,
    electionMs: opts.electionMs,
  });
  let api: Awaited<ReturnType<typeof startClientApi>>;
  try {
    // etcd checks only a member that had data before this start (embed/etcd.go StartEtcd).
    if (opts.initialCorruptCheck === true && hadData) await node.member.initialCorruptionCheck();
    api = await startClientApi({
      backend: node.member,
      urls: opts.listenClientUrls,
      ...(opts.clientTls === undefined ? {} : { tls: opts.clientTls }),
      log,
      httpRoutes: dashboard.handle,
      // The client API's planted bugs (watchResumeLate, the Lock service's) live there.
      config: {
        requestBytesMax: opts.maxRequestBytes,
        clientCertAuth: opts.clientCertAuth,
        authTokenTtlMs: opts.authTokenTtlSeconds * 1000,
        bcryptCost: opts.bcryptCost,
        ...opts.clientLimits,
        ...(opts.mutants === undefined ? {} : { mutants: opts.mutants }),
      },
      metrics: node.metrics,
    });
  } catch (e) {
    await node.stop();
    throw e;
  }
  let metricsListener: MetricsListener | undefined;
  if (opts.listenMetricsUrls !== undefined && opts.listenMetricsUrls.length > 0) {
    try {
      metricsListener = await startMetricsListener({
        urls: opts.listenMetricsUrls,
        backend: node.member,
        metrics: node.metrics,
        ...(opts.clientTls === undefined ? {} : { tls: opts.clientTls }),
        log,
      });
    } catch (e) {
      await api.close();
      await node.stop();
      throw e;
    }
  }
  if ((opts.corruptCheckIntervalMs ?? 0) > 0)
    node.member.startCorruptionCheck(opts.corruptCheckIntervalMs as number);
  let stopping: Promise<void> | undefined;
  return {
    node,
    clientUrls: api.ports.map((port, i) => {
      const u = new URL(opts.listenClientUrls[i] as string);
      u.port = String(port);
      return u.origin;
    }),
    metricsUrls: (metricsListener?.ports ?? []).map((port, i) => {
      const u = new URL(opts.listenMetricsUrls?.[i] as string);
      u.port = String(port);
      return u.origin;
    }),
    stop: () => {
      stopping ??= (async () => {
        // A leader hands on leadership first, while it still serves: the requests it holds
        // meanwhile go to the next leader, and the cluster waits out no election timeout.
        await node.member.handOffLeadership();
        dashboard.close();
        await metricsListener?.close();
        await api.close();
        await node.stop();
      })();
      return stopping;
    },
  };
}
