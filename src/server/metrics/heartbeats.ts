// etcd's etcd_server_heartbeat_send_failures_total: a leader whose heartbeat to a peer leaves
// more than two heartbeat intervals after the previous one has fallen behind (a slow disk or a
// starved event loop held its Ready loop). etcd's raftNode checks each outgoing heartbeat with a
// timeout detector (etcd 3.4 etcdserver/raft.go processMessages, pkg/contention/contention.go),
// reset whenever its soft state changes.
import type { NodeId } from '../../core/base/units.js';
import type { Message } from '../../core/raft/types.js';
import type { Transport } from '../../replica/io.js';

/** etcd's bound: a heartbeat later than this many intervals after the last one is a failure. */
export const HEARTBEAT_GAP_INTERVALS_MAX = 2;

export class HeartbeatWatch {
  failures = 0;
  private readonly lastSentMs = new Map<NodeId, number>();

  constructor(
    private readonly heartbeatMs: number,
    private readonly nowMs: () => number,
  ) {}

  /** Forget every peer's last heartbeat: leadership changed (etcd resets its detector then). */
  reset(): void {
    this.lastSentMs.clear();
  }

  /** `transport` with every heartbeat it sends timed against the previous one to that peer. */
  watch(transport: Transport): Transport {
    const flush = transport.flush?.bind(transport);
    return {
      send: (m: Message) => {
        if (m.type === 'heartbeat') this.sent(m.to);
        transport.send(m);
      },
      ...(flush === undefined ? {} : { flush }),
    };
  }

  private sent(to: NodeId): void {
    const now = this.nowMs();
    const last = this.lastSentMs.get(to);
    if (last !== undefined && now - last > HEARTBEAT_GAP_INTERVALS_MAX * this.heartbeatMs)
      this.failures++;
    this.lastSentMs.set(to, now);
  }
}
