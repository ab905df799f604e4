// `tenure up --tls`: a throwaway CA and the certificates of a local cluster in DIR/tls, so that
// the cluster runs on https:// client and peer URLs as a production one would, with client
// certificates required (etcd's --client-cert-auth) and peers verifying each other:
//
//   ca.crt                  the CA (its key is never written: nothing more can be signed)
//   server.crt, server.key  served on the client URLs; IP SAN 127.0.0.1, DNS localhost
//   peer.crt, peer.key      served and presented between members; IP SAN 127.0.0.1
//   client.crt, client.key  CN=root, for etcdctl and the readiness probe
//
// Made once and reused while all are there (a restarted `up` keeps working with the etcdctl
// flags it printed before). The member data of a TLS cluster is bound to https:// peer URLs
// (member IDs derive from them), so a data dir is kept to the mode it was made in.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LaunchError } from '../launcher/errors.js';
import type { ClusterOptions } from '../launcher/cluster.js';

/** How long the throwaway certificates are valid: a local cluster's, not a deployment's. */
const CLUSTER_TLS_VALIDITY_DAYS = 365;
/** Where under the cluster's directory the certificates go. */
const TLS_DIR = 'tls';

export interface ClusterTlsFiles {
  readonly caFile: string;
  /** The client certificate (CN=root) and its key. */
  readonly certFile: string;
  readonly keyFile: string;
}

export interface ClusterTls {
  readonly files: ClusterTlsFiles;
  /** What the launcher starts the members with. */
  readonly launch: NonNullable<ClusterOptions['tls']>;
}

/** The launcher's default member names (n1, n2, …), whose data dirs are DIR/NAME. */
function hasMemberData(dir: string, size: number): boolean {
  return Array.from({ length: size }, (_, i) => join(dir, `n${i + 1}`)).some((d) => existsSync(d));
}

/**
 * The certificates of a `--tls` cluster in `dir` (made if missing), or undefined without `tls`.
 * Refuses, with a LaunchError, a data dir whose members were made in the other mode.
 */
export async function clusterTls(
  dir: string,
  size: number,
  tls: boolean,
): Promise<ClusterTls | undefined> {
  const tlsDir = join(dir, TLS_DIR);
  const f = (name: string): string => join(tlsDir, name);
  const all = ['ca.crt', 'server.crt', 'server.key', 'peer.crt', 'peer.key', 'client.crt'];
  all.push('client.key');
  const made = existsSync(f('ca.crt'));
  if (hasMemberData(dir, size) && made !== tls)
    throw new LaunchError(
      'TLS_MISMATCH',
      `${dir} holds a cluster started ${made ? 'with' : 'without'} --tls (its member IDs ` +
        `derive from its peer URLs): start it ${made ? 'with' : 'without'} --tls again, or ` +
        `rm -rf ${dir} for a fresh one`,
    );
  if (!tls) return undefined;
  if (!all.every((n) => existsSync(f(n)))) await makeAll(tlsDir);
  return {
    files: { caFile: f('ca.crt'), certFile: f('client.crt'), keyFile: f('client.key') },
    launch: {
      client: { certFile: f('server.crt'), keyFile: f('server.key'), caFile: f('ca.crt') },
      peer: { certFile: f('peer.crt'), keyFile: f('peer.key'), caFile: f('ca.crt') },
      probe: { caFile: f('ca.crt'), certFile: f('client.crt'), keyFile: f('client.key') },
    },
  };
}

async function makeAll(tlsDir: string): Promise<void> {
  const { issue, makeCa } = await import('../server/certs.js');
  const days = CLUSTER_TLS_VALIDITY_DAYS;
  const ca = await makeCa('tenure up --tls throwaway CA', days);
  // Both usages: etcd 3.4's grpc-gateway (the JSON API on the client URLs) dials its own gRPC
  // server presenting the server certificate as a client one (embed/serve.go; etcd-io/etcd
  // issues 9785 and 16590), which --client-cert-auth rejects without clientAuth.
  const server = await issue(ca, {
    commonName: 'tenure member',
    hosts: ['127.0.0.1', 'localhost'],
    purposes: ['serverAuth', 'clientAuth'],
    validityDays: days,
  });
  // etcd presents the one peer certificate as server and as client: both usages.
  const peer = await issue(ca, {
    commonName: 'tenure peer',
    hosts: ['127.0.0.1'],
    purposes: ['serverAuth', 'clientAuth'],
    validityDays: days,
  });
  // CN=root: with etcd auth on, a certificate's CN is the user (etcd's AuthInfoFromTLS).
  const client = await issue(ca, {
    commonName: 'root',
    hosts: [],
    purposes: ['clientAuth'],
    validityDays: days,
  });
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const write = (name: string, text: string, key: boolean): void =>
    writeFileSync(join(tlsDir, name), text, key ? { mode: 0o600 } : {});
  write('server.crt', server.certPem, false);
  write('server.key', server.keyPem, true);
  write('peer.crt', peer.certPem, false);
  write('peer.key', peer.keyPem, true);
  write('client.crt', client.certPem, false);
  write('client.key', client.keyPem, true);
  // Last: its presence says the set is complete (see the reuse check above).
  write('ca.crt', ca.certPem, false);
}
