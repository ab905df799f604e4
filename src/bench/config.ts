// Workload sizes and named limits of `tenure bench`, in one place. Two presets: `full` (the real
// comparison; sized so that 3 rounds on both systems finish in under 10 minutes on the project's
// 2-core machine) and `quick` (a smoke test for CI: tiny workloads, one round, one failover
// sample). The definitions follow the workloads a–g of the etcd 3.4.23 baseline measured on the
// same machine class, with smaller counts so that six cluster runs fit the time budget.

export interface BenchSizes {
  /** a. Sequential puts, 1 client, random endpoint per call. Baseline: 2000. */
  readonly seqPuts: number;
  /** b. Puts at `inflight` concurrency. Baseline: 20000 (6.6 s on etcd). */
  readonly throughputPuts: number;
  /** c. Linearizable and serializable gets each, over `getKeySpace` keys. Baseline: 20000. */
  readonly gets: number;
  /** Keys preloaded for the get workloads. Baseline: 1000. */
  readonly getKeySpace: number;
  /** d. Leases granted (TTL `leaseTtlSeconds`) and keepalives sent. Baseline: 1000. */
  readonly leases: number;
  /** e. Lock cycles (acquire → release) shared by `lockClients` contenders. Baseline: 500. */
  readonly lockCycles: number;
  /** Watch fan-out: watchers on one key, and the puts the single writer makes. */
  readonly watchers: number;
  readonly watchPuts: number;
  /** f. kill -9 of the Raft leader per round (each followed by a restart). Baseline: 5. */
  readonly failoverSamples: number;
  /**
   * Leader kill -9 per round, through the SDK (leader-failover-sdk); issue 19 asks for 20 per
   * figure, as many as leader-failover's `failoverSamples`.
   */
  readonly sdkFailoverSamples: number;
  /**
   * leader-pause: SIGSTOP trials per pause duration (`pauseDurationsMs`), same order. The 1.5 s
   * pause (the one the election work targets) gets the 20; the others fewer, so that a
   * full run of the four failover workloads stays near 15 min on 3 systems.
   */
  readonly pauseTrials: readonly number[];
  /** rolling-restart: full rolling restarts (SIGTERM, restart, ready; each member once). */
  readonly rollingRestarts: number;
  /** lock-failover: holder kill -9 followed by a leader kill -9, per round. */
  readonly lockFailoverSamples: number;
  /** g. kill -9 of the leading elector process per round. Baseline: 3. */
  readonly electionSamples: number;
  /** Session TTL of the electors in the election failover, in s. Baseline: 5. */
  readonly electionTtlSeconds: number;
  /** Unmeasured operations before each measured loop. */
  readonly warmupOps: number;
  /** Unmeasured puts (and as many gets of each kind) on each fresh cluster (warmup.ts). */
  readonly clusterWarmupOps: number;
  /** Rounds (each runs every system once, alternating the order). */
  readonly rounds: number;
}

export const fullSizes: BenchSizes = {
  seqPuts: 1000,
  throughputPuts: 5000,
  gets: 5000,
  getKeySpace: 1000,
  leases: 1000,
  lockCycles: 300,
  watchers: 100,
  watchPuts: 300,
  failoverSamples: 20,
  sdkFailoverSamples: 20,
  pauseTrials: [5, 5, 20, 5],
  rollingRestarts: 3,
  lockFailoverSamples: 5,
  electionSamples: 2,
  electionTtlSeconds: 5,
  warmupOps: 50,
  clusterWarmupOps: 4000,
  rounds: 3,
};

export const quickSizes: BenchSizes = {
  seqPuts: 200,
  throughputPuts: 200,
  gets: 200,
  getKeySpace: 100,
  leases: 200,
  lockCycles: 30,
  watchers: 10,
  watchPuts: 20,
  failoverSamples: 1,
  sdkFailoverSamples: 1,
  pauseTrials: [1, 1, 1, 1],
  rollingRestarts: 1,
  lockFailoverSamples: 1,
  electionSamples: 1,
  electionTtlSeconds: 2,
  warmupOps: 10,
  clusterWarmupOps: 50,
  rounds: 1,
};

// Named limits.
/** Requests in flight for the throughput workloads (baseline b, c, d). */
export const inflight = 64;
/** Contending lock clients (baseline e). */
export const lockClients = 8;
/** Lease TTL of the lease workloads, in s (baseline d). */
export const leaseTtlSeconds = 5;
/** A closed-loop workload stops after this long even if its count is not reached (baseline: 10 s). */
export const workloadTimeCapMs = 10_000;
/** Watch fan-out: how long to wait for the last events after the last put. */
export const watchDrainMs = 5_000;
/** Etcd3 clients the watchers are spread over (each multiplexes its watchers on one stream). */
export const watchClientsMax = 10;
/** Deadline of each unary call of the etcd3 client (none for streams). */
export const callDeadlineMs = 10_000;
/** Failover: put probes are started this often (baseline f: 10 ms), each with this deadline. */
export const probeIntervalMs = 10;
export const probeDeadlineMs = 2_000;
/** Failover: give up on a sample after this long without a successful put. */
export const failoverGiveUpMs = 20_000;
/** Failover: concurrent background writers keeping the cluster under load during the kill. */
export const failoverLoadWorkers = 4;
/** Failover: background load runs this long before the kill. */
export const failoverLoadLeadMs = 300;
/** Election failover: give up after this many TTLs without a new leader. */
export const electionGiveUpTtls = 6;
/** A cluster (or a restarted member) must agree on a leader within this long. */
export const readyTimeoutMs = 30_000;
/** Raft timing passed to both systems (etcd's defaults, pinned). */
export const heartbeatIntervalMs = 100;
export const electionTimeoutMs = 1000;
/**
 * `--etcd-timing 50/500`: the extra etcd system `etcd-50/500` runs with this heartbeat and
 * election timeout (etcd's tuning guide, Documentation/tuning.md, for a low-latency network),
 * so tenure's failover figures can be read against an etcd tuned for fast failover too.
 */
export const fastHeartbeatIntervalMs = 50;
export const fastElectionTimeoutMs = 500;
/** leader-pause: how long the leader is stopped (SIGSTOP … SIGCONT), in ms. */
export const pauseDurationsMs: readonly number[] = [500, 1000, 1500, 2000];
/**
 * leader-pause: after SIGCONT, the cluster must agree on a leader and stay so this long before
 * the after-status is read, so that an election the pause provoked late is counted too (a few
 * election timeouts of etcd's default).
 */
export const pauseSettleMs = 3_000;
/** Background writers of leader-pause and rolling-restart (sequential puts each). */
export const gapWriters = 4;
/** Each background put's bound (the client's own timeout), in ms. */
export const gapPutTimeoutMs = 2_000;
/** lock-failover: session TTL of holder and waiter, in s (the target is TTL + 0.5 s). */
export const lockFailoverTtlSeconds = 5;
/** lock-failover: the target slack over the TTL, in ms. */
export const lockFailoverSlackMs = 500;
/**
 * lock-failover: the leader is killed a uniformly random 0–TTL/3 after the holder, i.e. while
 * the holder's lease runs down, early enough that the lease must expire under the new leader.
 */
export const lockFailoverLeaderKillMaxFraction = 1 / 3;
