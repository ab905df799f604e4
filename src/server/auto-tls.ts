// `--auto-tls` and `--peer-auto-tls`, as etcd 3.4 does them (embed/config.go ClientSelfCert and
// PeerSelfCert, pkg/transport/listener.go SelfCert): a self-signed certificate for the listen
// URLs' hosts, written once to <data-dir>/fixtures/client/ or <data-dir>/fixtures/peer/ as
// cert.pem and key.pem and reused from there at every later start. Given --cert-file and
// --key-file (or the peer pair), the flag is ignored (config.ts never asks for it then).
//
// What it buys: encryption, not authentication. Nobody signed the certificate, so a client must
// skip verification (`etcdctl --insecure-skip-tls-verify`), and members dial each other without
// verifying (peer-tls.ts `selfSigned`): anyone who can reach the peer port can still join the
// conversation, only passive eavesdroppers are kept out.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartOptions } from './config.js';
import type { KeyPurpose } from './certs.js';

/** etcd 3.4's self cert validity (SelfCert: one year; the flag to change it came in 3.5). */
export const AUTO_TLS_VALIDITY_DAYS = 365;

export interface SelfCertFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** False when the files were already there and are reused. */
  readonly created: boolean;
}

/** The hosts of `urls`, without brackets, once each. */
export function urlHosts(urls: readonly string[]): string[] {
  return [...new Set(urls.map((u) => new URL(u).hostname.replace(/^\[(.*)\]$/, '$1')))];
}

/** cert.pem and key.pem in `dir`: reused if both are there, else made for `hosts`. */
export async function selfCert(
  dir: string,
  hosts: readonly string[],
  purposes: readonly KeyPurpose[],
): Promise<SelfCertFiles> {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile, created: false };
  const { selfSigned } = await import('./certs.js');
  const made = await selfSigned({
    commonName: 'tenure auto TLS',
    hosts,
    purposes,
    validityDays: AUTO_TLS_VALIDITY_DAYS,
  });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, made.keyPem, { mode: 0o600 });
  writeFileSync(certFile, made.certPem);
  return { certFile, keyFile, created: true };
}

interface AutoTlsLog {
  info(obj: object, msg: string): void;
}

/**
 * The options with the auto TLS certificates in place of the flags that asked for them. The
 * peer certificate is presented as a client too, so it carries both extended key usages.
 */
export async function withAutoTls(opts: StartOptions, log: AutoTlsLog): Promise<StartOptions> {
  let out = opts;
  if (opts.clientAutoTls === true) {
    const dir = join(opts.dataDir, 'fixtures', 'client');
    const c = await selfCert(dir, urlHosts(opts.listenClientUrls), ['serverAuth']);
    log.info({ ...c }, c.created ? 'auto TLS: client certificate made' : 'auto TLS: reused');
    out = { ...out, clientTls: { certFile: c.certFile, keyFile: c.keyFile } };
  }
  if (opts.peerAutoTls === true) {
    const dir = join(opts.dataDir, 'fixtures', 'peer');
    const c = await selfCert(dir, urlHosts(opts.listenPeerUrls), ['serverAuth', 'clientAuth']);
    log.info({ ...c }, c.created ? 'peer auto TLS: certificate made' : 'peer auto TLS: reused');
    out = {
      ...out,
      peerTls: {
        certFile: c.certFile,
        keyFile: c.keyFile,
        clientCertAuth: false,
        selfSigned: true,
      },
    };
  }
  return out;
}
