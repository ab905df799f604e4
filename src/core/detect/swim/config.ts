// The configuration of the SWIM protocol state machine: one typed struct, every field with its
// meaning, unit, default and trade-off, named presets, and validation that names the bad field.
// The same engine runs tenure's membership and, with the Lifeguard and tenure extensions switched
// off, the calibrated SWIM and memberlist baselines of the evaluation harness.
//
// Sources of the defaults: SWIM (Das, Gupta, Motivala, DSN 2002), Lifeguard (Dadgar, Phillips,
// Currey, arXiv 1707.00788), memberlist's LAN/WAN/local presets (DefaultLANConfig,
// DefaultWANConfig and DefaultLocalConfig in hashicorp/memberlist config.go).

export type SuspicionMode =
  /** SWIM §4.2: a fixed suspicion timeout, SuspicionMult · max(1, log10 n) · probe interval. */
  | 'fixed'
  /** Lifeguard §IV.B (LHA-Suspicion): from max down to min as independent confirmations arrive. */
  | 'lifeguard'
  /** tenure: dead no earlier than P* after the target could first have stopped, then Lifeguard. */
  | 'tenure';

export interface WatchConfig {
  /** Interval of the one-way heartbeat to the ring watcher, ms. 1000: 1 packet/s per node. */
  readonly heartbeatIntervalMs: number;
  /** φ at which the watcher probes a silent peer. 8 with the pause below ≈ 2.2 s of silence. */
  readonly alarmPhi: number;
  /** Tolerated extra silence in the watcher's φ, ms: 600 forgives one lost heartbeat. */
  readonly alarmPauseMs: number;
  /** Interval history per watched peer. 100: adapts within ~2 minutes. */
  readonly windowSize: number;
  /** Floor on σ of the watch φ, ms. 100 as Akka. */
  readonly minStdDevMs: number;
}

export interface FlapDampingConfig {
  /** Penalty added when a member leaves `alive`. */
  readonly penalty: number;
  /** Hold the member at `suspect` (quarantine) once its penalty reaches this. */
  readonly suppressAt: number;
  /** Let it back once the decayed penalty falls below this. */
  readonly reuseBelow: number;
  /** Half-life of the penalty, ms. 10 min: three flaps in 10 min suppress, two do not. */
  readonly halfLifeMs: number;
}

export interface SwimConfig {
  /** Time between probes of one member, ms. SWIM's T'. LAN 1000 (memberlist), tenure 2000. */
  readonly probeIntervalMs: number;
  /** Wait for a direct ack before asking relays, ms. LAN 500, WAN 3000, local 200. */
  readonly probeTimeoutMs: number;
  /**
   * Total time from the ping to the verdict of a probe, ms. memberlist: the probe interval (the
   * indirect phase ends with the period). Longer: fewer false suspicions, slower detection.
   */
  readonly probeDeadlineMs: number;
  /** Relays asked in the indirect phase (SWIM's k). 3. More: fewer false positives, more packets. */
  readonly indirectChecks: number;
  /** Lifeguard: relays send a nack when the target did not answer by 80 % of the probe timeout. */
  readonly nack: boolean;
  /** Also ping over TCP in the indirect phase (memberlist's fallback; UDP-only cuts). */
  readonly tcpFallback: boolean;
  /** Lifeguard local health multiplier: saturates at max − 1; 1 (or 0) turns it off. LAN 8. */
  readonly awarenessMax: number;
  /** Whether the local health multiplier scales the probe timeout (Lifeguard) or only the interval (memberlist). */
  readonly awarenessScalesTimeout: boolean;
  /** Suspicion timer. */
  readonly suspicion: SuspicionMode;
  /** SuspicionMult: min suspicion = mult · max(1, log10 n) · probe interval. LAN 4, WAN 6, local 3. */
  readonly suspicionMult: number;
  /** Lifeguard: max suspicion = this × min. 6. */
  readonly suspicionMaxMult: number;
  /** Lifeguard buddy system: a ping to a suspect carries the suspicion first. */
  readonly buddy: boolean;
  /** Gossip period, ms, used only when there is news. 200 (LAN), 500 (WAN). */
  readonly gossipIntervalMs: number;
  /** Members per gossip round. 3 (LAN), 4 (WAN). */
  readonly gossipNodes: number;
  /** Gossip to the dead for this long after their death, ms (memberlist's GossipToTheDead). */
  readonly gossipToTheDeadMs: number;
  /** Each update is sent RetransmitMult · ceil(log10(n + 1)) times. 4. */
  readonly retransmitMult: number;
  /** Updates piggybacked on one packet (a stand-in for the 1400-byte UDP budget). 20. */
  readonly piggybackMax: number;
  /** Full state exchange over TCP with one member, ms; 0 disables. 30000. Scaled up above 32 members. */
  readonly pushPullIntervalMs: number;
  /** A restart takes a new epoch that outranks the old life (tenure); else refute with incarnations. */
  readonly epochIdentity: boolean;

  // tenure's additions; null or false switches each off.

  /** One-way heartbeats to a ring watcher, judged by φ accrual. */
  readonly watch: WatchConfig | null;
  /** P*, ms: a stop of the target up to this long never produces `dead`. 3000 on LAN. */
  readonly pauseToleranceMs: number;
  /** Margin for delivery and refutation on top of P*, ms. 300 on LAN. */
  readonly deadSlackMs: number;
  /** Shortest time between a node's own suspicion and its verdict of death, ms. */
  readonly minSuspectMs: number;
  /** Extra wait for members that only heard the rumor (the accuser normally decides first), ms. */
  readonly rumorBackupMs: number;
  /** A refused port (ICMP port unreachable, ECONNREFUSED), seen twice, is evidence of death. */
  readonly evidence: boolean;
  /** A timer that fires this late (ms) means we were stalled: distrust timeouts until I/O ran. 0: off. */
  readonly stallThresholdMs: number;
  /** A `dead` rumor that our own fresher contact contradicts becomes a suspicion instead. */
  readonly deadRumorCheck: boolean;
  /** Report a member that answers through relays but not directly as link-level unreachable. */
  readonly linkUnreachable: boolean;
  /** Tell a member we hold as dead that it is, when it talks to us (memberlist#311). */
  readonly reassertDead: boolean;
  /** Send the first gossip round as soon as there is news instead of at the next period. */
  readonly eagerGossip: boolean;
  /** BGP-style flap damping of the members' visible state; null: off. */
  readonly flapDamping: FlapDampingConfig | null;
}

/** Named maxima, each with the reason it exists. */
export const SWIM_LIMITS = {
  /** Members tracked; beyond this, joins are refused so memory stays bounded. */
  membersMax: 10_000,
  /** ping-req relays in flight at once; each costs one ping and a timer. */
  relaysMax: 256,
  /** Pending updates to gossip; the most-sent are dropped first beyond this. */
  broadcastQueueMax: 4096,
  /** Peers we watch at once; a ring gives each node one, handoffs briefly two. */
  watchedMax: 16,
  /** Packets one call may emit; a bug that loops on sends trips this. */
  outboxMax: 100_000,
  /** Probes waiting for acks (regular, alarm, buddy, evidence). */
  awaitingMax: 1024,
} as const;

const tenureDamping: FlapDampingConfig = {
  penalty: 1000,
  suppressAt: 2100,
  reuseBelow: 1000,
  halfLifeMs: 600_000,
};

const tenureWatch: WatchConfig = {
  heartbeatIntervalMs: 1000,
  alarmPhi: 8,
  alarmPauseMs: 600,
  windowSize: 100,
  minStdDevMs: 100,
};

const off = {
  watch: null,
  pauseToleranceMs: 0,
  deadSlackMs: 0,
  minSuspectMs: 0,
  rumorBackupMs: 0,
  evidence: false,
  stallThresholdMs: 0,
  deadRumorCheck: false,
  linkUnreachable: false,
  reassertDead: false,
  eagerGossip: false,
  flapDamping: null,
} as const;

/** memberlist's DefaultLANConfig (hashicorp/memberlist config.go). */
export const MEMBERLIST_LAN: SwimConfig = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 500,
  probeDeadlineMs: 1000,
  indirectChecks: 3,
  nack: true,
  tcpFallback: true,
  awarenessMax: 8,
  awarenessScalesTimeout: false,
  suspicion: 'lifeguard',
  suspicionMult: 4,
  suspicionMaxMult: 6,
  buddy: true,
  gossipIntervalMs: 200,
  gossipNodes: 3,
  gossipToTheDeadMs: 30_000,
  retransmitMult: 4,
  piggybackMax: 20,
  pushPullIntervalMs: 30_000,
  epochIdentity: false,
  ...off,
};

/** SWIM as published: no nacks, no local health, a fixed suspicion timeout, no buddy, no TCP. */
export const SWIM_PLAIN: SwimConfig = {
  ...MEMBERLIST_LAN,
  nack: false,
  tcpFallback: false,
  awarenessMax: 1,
  suspicion: 'fixed',
  buddy: false,
};

/**
 * tenure on a LAN: a ring watch (1 heartbeat/s) plus SWIM probes every 2 s, the same 2 packets
 * per node per second as memberlist's LAN defaults; dead no earlier than P* = 3 s after the target
 * could have stopped; Lifeguard, the fast path on evidence, the stall guard and flap damping.
 */
export const TENURE_LAN: SwimConfig = {
  probeIntervalMs: 2000,
  probeTimeoutMs: 500,
  probeDeadlineMs: 1000,
  indirectChecks: 3,
  nack: true,
  tcpFallback: true,
  awarenessMax: 8,
  awarenessScalesTimeout: true,
  suspicion: 'tenure',
  suspicionMult: 4,
  suspicionMaxMult: 3,
  buddy: true,
  gossipIntervalMs: 200,
  gossipNodes: 3,
  gossipToTheDeadMs: 30_000,
  retransmitMult: 4,
  piggybackMax: 20,
  pushPullIntervalMs: 30_000,
  epochIdentity: true,
  watch: tenureWatch,
  pauseToleranceMs: 3000,
  deadSlackMs: 300,
  minSuspectMs: 500,
  rumorBackupMs: 1500,
  evidence: true,
  stallThresholdMs: 500,
  deadRumorCheck: true,
  linkUnreachable: true,
  reassertDead: true,
  eagerGossip: false,
  flapDamping: tenureDamping,
};

/** tenure across data centres: memberlist's WAN timing, a 10 s P*. */
export const TENURE_WAN: SwimConfig = {
  ...TENURE_LAN,
  probeIntervalMs: 5000,
  probeTimeoutMs: 3000,
  probeDeadlineMs: 5000,
  suspicionMult: 6,
  gossipIntervalMs: 500,
  gossipNodes: 4,
  watch: { ...tenureWatch, heartbeatIntervalMs: 2500, alarmPauseMs: 2500, minStdDevMs: 500 },
  pauseToleranceMs: 10_000,
  deadSlackMs: 1500,
  minSuspectMs: 2000,
  rumorBackupMs: 5000,
  stallThresholdMs: 1500,
};

/**
 * tenure on one host (tests, loopback): suspect within ~1.3 s of silence, but still P* = 3 s, so a
 * 2 s SIGSTOP yields `suspect` and never `dead`.
 */
export const TENURE_LOCAL: SwimConfig = {
  ...TENURE_LAN,
  probeIntervalMs: 1000,
  probeTimeoutMs: 200,
  probeDeadlineMs: 400,
  indirectChecks: 2,
  suspicionMult: 3,
  gossipIntervalMs: 100,
  watch: { ...tenureWatch, heartbeatIntervalMs: 300, alarmPauseMs: 300, minStdDevMs: 50 },
  pauseToleranceMs: 3000,
  deadSlackMs: 200,
  minSuspectMs: 300,
  rumorBackupMs: 1000,
  stallThresholdMs: 300,
};

export class SwimConfigError extends Error {
  override readonly name = 'SwimConfigError';
  readonly code = 'BAD_CONFIG';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`swim config: ${field}: ${message}`);
  }
}

/** Validate a config; throws SwimConfigError naming the first bad field. */
export function validateSwimConfig(c: SwimConfig): SwimConfig {
  const positive = (field: keyof SwimConfig, v: number) => {
    if (!(Number.isFinite(v) && v > 0)) throw new SwimConfigError(field, `must be > 0, got ${v}`);
  };
  const nonNegative = (field: keyof SwimConfig, v: number) => {
    if (!(Number.isFinite(v) && v >= 0)) throw new SwimConfigError(field, `must be ≥ 0, got ${v}`);
  };
  positive('probeIntervalMs', c.probeIntervalMs);
  positive('probeTimeoutMs', c.probeTimeoutMs);
  positive('probeDeadlineMs', c.probeDeadlineMs);
  if (c.probeDeadlineMs < c.probeTimeoutMs) {
    throw new SwimConfigError('probeDeadlineMs', 'must be ≥ probeTimeoutMs');
  }
  if (!Number.isInteger(c.indirectChecks) || c.indirectChecks < 0 || c.indirectChecks > 16) {
    throw new SwimConfigError('indirectChecks', `must be an integer in [0, 16]`);
  }
  if (!Number.isInteger(c.awarenessMax) || c.awarenessMax < 0 || c.awarenessMax > 64) {
    throw new SwimConfigError('awarenessMax', 'must be an integer in [0, 64]');
  }
  positive('suspicionMult', c.suspicionMult);
  if (c.suspicionMaxMult < 1) throw new SwimConfigError('suspicionMaxMult', 'must be ≥ 1');
  positive('gossipIntervalMs', c.gossipIntervalMs);
  if (!Number.isInteger(c.gossipNodes) || c.gossipNodes < 1) {
    throw new SwimConfigError('gossipNodes', 'must be an integer ≥ 1');
  }
  nonNegative('gossipToTheDeadMs', c.gossipToTheDeadMs);
  positive('retransmitMult', c.retransmitMult);
  if (!Number.isInteger(c.piggybackMax) || c.piggybackMax < 1 || c.piggybackMax > 256) {
    throw new SwimConfigError('piggybackMax', 'must be an integer in [1, 256]');
  }
  nonNegative('pushPullIntervalMs', c.pushPullIntervalMs);
  nonNegative('pauseToleranceMs', c.pauseToleranceMs);
  nonNegative('deadSlackMs', c.deadSlackMs);
  nonNegative('minSuspectMs', c.minSuspectMs);
  nonNegative('rumorBackupMs', c.rumorBackupMs);
  nonNegative('stallThresholdMs', c.stallThresholdMs);
  if (c.suspicion === 'tenure' && c.watch === null && c.pauseToleranceMs === 0) {
    throw new SwimConfigError('pauseToleranceMs', "must be > 0 with suspicion 'tenure'");
  }
  if (c.watch !== null) {
    const w = c.watch;
    if (!(w.heartbeatIntervalMs > 0)) throw new SwimConfigError('watch.heartbeatIntervalMs', '> 0');
    if (!(w.alarmPhi > 0)) throw new SwimConfigError('watch.alarmPhi', 'must be > 0');
    if (!(w.alarmPauseMs >= 0)) throw new SwimConfigError('watch.alarmPauseMs', 'must be ≥ 0');
    if (!(Number.isInteger(w.windowSize) && w.windowSize >= 2)) {
      throw new SwimConfigError('watch.windowSize', 'must be an integer ≥ 2');
    }
    if (!(w.minStdDevMs >= 0)) throw new SwimConfigError('watch.minStdDevMs', 'must be ≥ 0');
  }
  if (c.flapDamping !== null) {
    const f = c.flapDamping;
    if (!(f.penalty > 0)) throw new SwimConfigError('flapDamping.penalty', 'must be > 0');
    if (!(f.reuseBelow < f.suppressAt)) {
      throw new SwimConfigError('flapDamping.reuseBelow', 'must be < suppressAt');
    }
    if (!(f.halfLifeMs > 0)) throw new SwimConfigError('flapDamping.halfLifeMs', 'must be > 0');
  }
  return c;
}
