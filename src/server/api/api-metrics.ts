// What the client API needs from the server's metrics (src/server/metrics): the counters it adds
// to while it serves, and the /metrics text it answers with on the client port.
import type { LockNames } from './lock-names.js';
import type { RpcStats } from './rpc-stats.js';

/** A scrape's answer: the Prometheus text exposition and its content type. */
export interface MetricsText {
  readonly contentType: string;
  readonly body: string;
}

export interface ClientApiMetrics {
  readonly rpc: RpcStats;
  readonly locks: LockNames;
  scrape(): Promise<MetricsText>;
}
