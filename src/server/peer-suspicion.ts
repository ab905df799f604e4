// How suspect each peer is, on the φ scale (Hayashibara et al., SRDS 2004; src/core/detect): one
// φ accrual detector per peer, fed every batch that arrives from it (each carries a clock frame,
// peer-transport.ts). Observation only: Raft's election timeout still decides elections; this is
// what /metrics (tenure_peer_suspicion_phi), the dashboard and `tenure status` show.
//
// In Raft a follower hears only from the leader and the leader from every follower, so φ means
// something only for those pairs; `expected` says which (callers show nothing for the others,
// whose silence is normal).
import type { NodeId } from '../core/base/units.js';
import { PhiAccrualDetector, type PhiAccrualConfig } from '../core/detect/phi-accrual.js';

/** φ at or above which a peer counts as suspect (Akka's and Cassandra's default threshold). */
export const PEER_PHI_SUSPECT = 8;
/** φ at or above which a peer counts as late: about three standard deviations past the mean. */
export const PEER_PHI_LATE = 3;

/**
 * Batches arrive once per heartbeat from a healthy peer. σ is floored at one heartbeat so that a
 * regular loopback link does not turn a 200 ms event-loop stall into certainty: with a 100 ms
 * heartbeat, φ reaches 3 after ≈ 0.4 s of silence and 8 after ≈ 0.7 s.
 */
export function peerPhiConfig(heartbeatMs: number): PhiAccrualConfig {
  return {
    model: 'normal',
    threshold: PEER_PHI_SUSPECT,
    windowSize: 1000,
    minStdDevMs: heartbeatMs,
    acceptablePauseMs: 0,
    bootstrapIntervalsMs: [heartbeatMs * 0.75, heartbeatMs * 1.25],
    maxRecordedIntervalMs: Infinity,
    // A batch after a long silence (a paused or partitioned peer) is not a sample of its rate.
    skipIntervalWhenUnavailable: true,
  };
}

export type Suspicion = 'ok' | 'late' | 'suspect';

/**
 * Whether Raft has `peer` send to us, so that its silence means something: a leader hears every
 * follower, a follower only its leader (followers exchange nothing).
 */
export function hearsFrom(
  raft: { readonly role: string; readonly leader: NodeId },
  peer: NodeId,
): boolean {
  return raft.role === 'leader' || raft.leader === peer;
}

export function suspicionOf(phi: number): Suspicion {
  if (phi >= PEER_PHI_SUSPECT) return 'suspect';
  return phi >= PEER_PHI_LATE ? 'late' : 'ok';
}

export class PeerSuspicion {
  private readonly detectors = new Map<NodeId, PhiAccrualDetector>();
  private readonly config: PhiAccrualConfig;

  constructor(heartbeatMs: number) {
    this.config = peerPhiConfig(heartbeatMs);
  }

  /** A batch from `peer` arrived at `localMs` (this member's monotonic clock). */
  heard(peer: NodeId, localMs: number): void {
    let d = this.detectors.get(peer);
    if (d === undefined) {
      d = new PhiAccrualDetector(this.config);
      this.detectors.set(peer, d);
    }
    d.heartbeat(localMs);
  }

  /** φ of `peer` at `nowMs`; undefined before anything arrived from it. */
  phi(peer: NodeId, nowMs: number): number | undefined {
    const d = this.detectors.get(peer);
    return d?.lastHeartbeatMs === undefined ? undefined : d.level(nowMs);
  }
}
