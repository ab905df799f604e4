// What a member counts about its own work, for the server's /metrics (src/server/metrics): plain
// numbers bumped where the work happens and read when Prometheus scrapes, so that counting costs
// an addition on the request path and nothing more. The simulator runs the same member and never
// reads them.

/** Counters and a hook the member updates; read-only for everything else. */
export class MemberStats {
  /**
   * Client proposals waiting for their outcome on this member (etcd's
   * etcd_server_proposals_pending, server/etcdserver/v3_server.go processInternalRaftRequestOnce:
   * counted on the member the client asked, forwarded or not).
   */
  proposalsPending = 0;
  /**
   * Client proposals that failed: not committed in time, refused or lost with a leader change
   * (etcd's etcd_server_proposals_failed_total). A command the key space refused (a compare that
   * failed, a lease not found) is an outcome, not a failure.
   */
  proposalsFailed = 0;
  /** Lease renewals this member granted as leader (etcd's etcd_debugging_lease_renewed_total). */
  leasesRenewed = 0;
  /**
   * Told of every keepalive this member answered for a client, with how long it took in ms
   * (forwarded to the leader, or confirmed by its quorum round): the server's latency histogram.
   */
  onKeepAliveMs: ((ms: number) => void) | undefined;
}
