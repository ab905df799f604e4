// TLS between members, with etcd 3.4's peer flags and their meaning (etcd's embed/config.go and
// pkg/transport/listener.go): `--peer-cert-file`/`--peer-key-file` serve https:// peer URLs and
// are also the certificate a member presents when it dials a peer (etcd uses the one peer
// certificate both ways, so it needs both the serverAuth and the clientAuth extended key usage);
// `--peer-trusted-ca-file` is what a peer's certificate must be signed by, and alone already makes
// the listener ask for and verify one (3.4's ServerConfig: a CA file implies
// RequireAndVerifyClientCert); `--peer-client-cert-auth` says so out loud. A dialer checks the
// peer's certificate against the CA and the host of its peer URL (an IP SAN for 127.0.0.1).
//
// `--peer-auto-tls` certificates are self-signed (auto-tls.ts): a member dialing with one skips
// verification, as etcd's ClientConfig does for a self cert, so the link is encrypted but nobody
// is authenticated.
//
// The peer protocol itself (peer-frames.ts) runs unchanged inside the TLS stream. The TCP socket
// is dialed first and TLS is layered on it, so that the transport can still reset the TCP
// connection (RST) when a peer stops acknowledging (peer-transport.ts, PEER_WAIT_MAX_MS).
import { isIP, Socket } from 'node:net';
import * as tls from 'node:tls';
import { readPem, TlsConfigError } from './api/client-tls.js';
import type { PeerAddress } from './peer-frames.js';

/**
 * The longest a TLS handshake may take, either side, in ms. etcd bounds a peer connection's
 * reads and writes at 5 s (rafthttp ConnReadTimeout/ConnWriteTimeout); a handshake that takes
 * longer is a peer that is not answering in TLS, and the dialer backs off and tries again.
 */
export const PEER_TLS_HANDSHAKE_TIMEOUT_MS = 5000;

export interface PeerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** PEM bundle of the CAs whose peer certificates are accepted. */
  readonly trustedCaFile?: string;
  /** Refuse a peer that does not present a certificate signed by the trusted CA. */
  readonly clientCertAuth: boolean;
  /**
   * The certificate is self-signed (`--peer-auto-tls`): dial without verifying the peer, as
   * etcd 3.4 does for a self cert. Encryption, no authentication.
   */
  readonly selfSigned?: boolean;
  /**
   * `--peer-cert-allowed-cn`: a dialing peer's verified certificate must have this CN (etcd
   * 3.4's TLSInfo.AllowedCN, checked in its VerifyPeerCertificate on the peer listener).
   */
  readonly allowedCn?: string;
}

/** The options of both ends of a peer connection, files read. */
export interface PeerTls {
  /**
   * For the listener (`tls.createServer`). It asks for a certificate when `verifyPeers`, but
   * does not reject one itself: the transport refuses an unauthorized peer once the handshake
   * is done, before it reads a byte, so that the log can say who was refused and why (Node's
   * own rejection reports only "socket hang up", after the socket is gone).
   */
  readonly server: tls.TlsOptions;
  /** A peer must present a certificate the trusted CA signed (etcd's ClientCertAuth). */
  readonly verifyPeers: boolean;
  /** A peer's certificate must also carry this CN (`--peer-cert-allowed-cn`). */
  readonly allowedCn?: string;
  /** For dialing (`tls.connect`), without the socket and host of the connection. */
  readonly client: tls.ConnectionOptions;
  readonly handshakeTimeoutMs: number;
}

/** Read the files and build both ends' options; errors (TlsConfigError) show at start. */
export function peerTlsOptions(
  files: PeerTlsFiles,
  handshakeTimeoutMs = PEER_TLS_HANDSHAKE_TIMEOUT_MS,
): PeerTls {
  if (files.clientCertAuth && files.trustedCaFile === undefined)
    throw new TlsConfigError('--peer-client-cert-auth needs --peer-trusted-ca-file');
  const cert = readPem('--peer-cert-file', files.certFile);
  const key = readPem('--peer-key-file', files.keyFile);
  const ca =
    files.trustedCaFile === undefined
      ? undefined
      : readPem('--peer-trusted-ca-file', files.trustedCaFile);
  const verifyPeers = ca !== undefined || files.clientCertAuth;
  // Without a CA, a dialer verifies peers against Node's bundled public CAs, as etcd's does
  // against the system's: right only for peer certificates a public CA signed.
  const skipVerify = files.selfSigned === true;
  return {
    server: {
      cert,
      key,
      ...(ca === undefined ? {} : { ca }),
      requestCert: verifyPeers,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
    },
    verifyPeers,
    ...(files.allowedCn === undefined ? {} : { allowedCn: files.allowedCn }),
    client: {
      cert,
      key,
      ...(ca === undefined ? {} : { ca }),
      rejectUnauthorized: !skipVerify,
      minVersion: 'TLSv1.2',
    },
    handshakeTimeoutMs,
  };
}

/**
 * Why a verified inbound peer is still refused, or undefined: its certificate's CN is not
 * `--peer-cert-allowed-cn`. etcd 3.4 answers the handshake with "CommonName authentication
 * failed" (pkg/transport/listener.go); the CN found is added so the log says who it was.
 */
export function allowedCnRefusal(peerTls: PeerTls, socket: tls.TLSSocket): string | undefined {
  if (peerTls.allowedCn === undefined) return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  if (cn === peerTls.allowedCn) return undefined;
  return (
    `peer certificate refused: CommonName authentication failed (CN ${JSON.stringify(cn ?? '')}` +
    `, allowed ${JSON.stringify(peerTls.allowedCn)})`
  );
}

/** A dialed connection: `socket` carries the protocol, `tcp` is the connection under it. */
export interface PeerDial {
  readonly socket: Socket;
  readonly tcp: Socket;
  /** The event after which `socket` may be written: 'connect', or 'secureConnect' for TLS. */
  readonly ready: 'connect' | 'secureConnect';
}

/**
 * Dial a peer, in TLS when `peerTls` is set: the TCP socket is dialed here and TLS layered on it,
 * verifying the peer's certificate against the CA and against `addr.host` (Node's
 * checkServerIdentity matches an IP host against the certificate's IP SANs, a name against its
 * DNS SANs; SNI is sent for names only, RFC 6066 section 3).
 */
export function dialPeer(
  addr: PeerAddress,
  localAddress: string | undefined,
  peerTls: PeerTls | undefined,
): PeerDial {
  const tcp = new Socket();
  tcp.setNoDelay(true);
  tcp.connect({
    port: addr.port,
    host: addr.host,
    ...(localAddress !== undefined ? { localAddress } : {}),
  });
  if (peerTls === undefined) return { socket: tcp, tcp, ready: 'connect' };
  const socket = tls.connect({
    ...peerTls.client,
    socket: tcp,
    host: addr.host,
    ...(isIP(addr.host) === 0 ? { servername: addr.host } : {}),
  });
  return { socket, tcp, ready: 'secureConnect' };
}

/**
 * Whether the first bytes a peer sent open a TLS handshake: a handshake record (content type 22)
 * of TLS major version 3 (RFC 8446 section 5.1; every version since SSL 3.0). A plain peer's
 * first bytes are a frame's little-endian length, whose second byte is 0 for any hello.
 */
export function opensTlsHandshake(first: Buffer): boolean {
  return first.length >= 2 && first[0] === 0x16 && first[1] === 0x03;
}

/**
 * Whether an error a TLS socket raised comes from TLS itself: an alert or a failed check. In
 * TLS 1.3 a server's refusal of the client's certificate reaches the client as an alert after
 * its side of the handshake has completed (RFC 8446 section 4.4.2.4).
 */
export function isTlsError(e: Error): boolean {
  const code = (e as NodeJS.ErrnoException).code ?? '';
  return code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_');
}
