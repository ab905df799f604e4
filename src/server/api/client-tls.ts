// TLS on the client port, with etcd 3.4's flags and their meaning (etcd's embed/config.go and
// pkg/transport/listener.go): `--cert-file`/`--key-file` serve https:// URLs; `--trusted-ca-file`
// alone already makes the server ask for and verify a client certificate (as in 3.4, where
// a CA file implies ClientAuth = RequireAndVerifyClientCert); `--client-cert-auth` says so out
// loud. Both gRPC (ALPN h2) and the JSON gateway (http/1.1) sit behind the same listener.
import { readFileSync } from 'node:fs';
import type * as tls from 'node:tls';

export interface ClientTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** PEM bundle of the CAs whose client certificates are accepted. */
  readonly trustedCaFile?: string;
  /** Refuse a client that does not present a certificate signed by the trusted CA. */
  readonly clientCertAuth?: boolean;
}

export class TlsConfigError extends Error {
  override readonly name = 'TlsConfigError';
  readonly code = 'BAD_TLS_CONFIG';
}

export function readPem(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new TlsConfigError(`${flag}: cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The options of `tls.createServer` for these files; reads them now, so errors show at start. */
export function clientTlsServerOptions(files: ClientTlsFiles): tls.TlsOptions {
  if (files.clientCertAuth === true && files.trustedCaFile === undefined)
    throw new TlsConfigError('--client-cert-auth needs --trusted-ca-file to verify clients with');
  const verify = files.trustedCaFile !== undefined;
  return {
    cert: readPem('--cert-file', files.certFile),
    key: readPem('--key-file', files.keyFile),
    ...(verify ? { ca: readPem('--trusted-ca-file', files.trustedCaFile) } : {}),
    requestCert: verify,
    rejectUnauthorized: verify,
    // gRPC needs h2; the gateway and curl speak http/1.1. A client without ALPN (old curl) is
    // routed by its first bytes, as on a plain port.
    ALPNProtocols: ['h2', 'http/1.1'],
    minVersion: 'TLSv1.2',
  };
}

/**
 * Where the client listener leaves the verified client certificate's Subject CN on a connection
 * (the socket, or the stream that wraps it), for the gRPC server to read through the HTTP/2
 * session's socket proxy: CN-based auth (etcd auth/store.go AuthInfoFromTLS).
 */
export const VERIFIED_CN: unique symbol = Symbol('tenure.verifiedClientCommonName');

/** The CN of a verified client certificate; undefined without one (or unverified). */
export function verifiedCommonName(socket: tls.TLSSocket): string | undefined {
  if (!socket.authorized) return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  // A certificate may carry several CNs; etcd takes the first of the leaf.
  return Array.isArray(cn) ? cn[0] : cn;
}
