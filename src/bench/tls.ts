// What `tenure bench --tls` runs with: the certificates of a throwaway CA the CLI makes for the
// run (cli/cluster-tls.ts, as `tenure up --tls`), for both systems' members and every client.

import type { ClusterOptions } from '../launcher/cluster.js';

/** The CA every client trusts, and the client certificate (CN=root) and key it presents. */
export interface BenchTlsFiles {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface BenchTls {
  readonly files: BenchTlsFiles;
  /** Client and peer certificates of the members, and the readiness probe's. */
  readonly launch: NonNullable<ClusterOptions['tls']>;
}
